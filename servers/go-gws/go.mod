module wsbench/servers/go-gws

go 1.22

require github.com/lxzan/gws v1.8.9

require (
	github.com/dolthub/maphash v0.1.0 // indirect
	github.com/klauspost/compress v1.17.9 // indirect
)
