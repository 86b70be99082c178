// Command validate checks the Kubernetes manifests of deploy/k8s without a cluster or a
// network: every document is decoded strictly into the official k8s.io/api types
// (load.go), then the rules of a sharded wsbench run are checked (checks.go). It exits 1
// and lists every problem when anything is wrong. scripts/validate-k8s.sh runs it in CI.
// `validate pods` renders the same manifests into the Pods that deploy/k8s/play.sh runs
// with podman (pods.go).
//
//	go run . [DIR]    (DIR defaults to deploy/k8s's path from this folder: ..)
//	go run . pods -dir DIR -shards N -connections C -port P -image IMG -results HOSTDIR -start-at MS [-- WSBENCH-ARGS…]
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Validate loads and checks the deployment in dir: a one-line summary, or every problem.
func Validate(dir string) (string, []error) {
	d, errs := Load(dir)
	if d == nil {
		return "", errs
	}
	if d.Incomplete {
		return "", append(errs, fmt.Errorf("%s: the rules between manifests were not checked: fix the above first", dir))
	}
	errs = append(errs, Check(d)...)
	if len(errs) > 0 {
		return "", errs
	}
	kinds := map[string]int{}
	for _, o := range d.Objects {
		kinds[o.Kind]++
	}
	var parts []string
	for kind, n := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", n, kind))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%s: %d manifests valid (%s)", dir, len(d.Objects), strings.Join(parts, ", ")), nil
}

// podsCommand prints the Pods of `validate pods` (see pods.go).
func podsCommand(args []string) {
	flags := flag.NewFlagSet("pods", flag.ExitOnError)
	dir := flags.String("dir", "..", "the deploy/k8s folder")
	var play PodPlay
	flags.IntVar(&play.Shards, "shards", 2, "shard pods (the Job's completions)")
	flags.Int64Var(&play.Connections, "connections", 2000, "connections of the whole run")
	flags.IntVar(&play.Port, "port", 28080, "loopback port of the target server")
	flags.StringVar(&play.Image, "image", "", "the wsbench image (e.g. localhost/wsbench:0.1.0)")
	flags.StringVar(&play.ResultsDir, "results", "", "host folder for the results volume")
	flags.Int64Var(&play.StartAt, "start-at", 0, "START_AT, ms since the Unix epoch")
	flags.Parse(args)
	play.ExtraArgs = flags.Args()
	if play.Image == "" || play.ResultsDir == "" || play.StartAt <= 0 || play.Shards < 1 || play.Connections < int64(play.Shards) {
		fmt.Fprintln(os.Stderr, "validate pods: needs -image, -results, -start-at, and at least one connection per shard")
		os.Exit(2)
	}
	text, err := renderPods(*dir, play)
	if err != nil {
		fmt.Fprintln(os.Stderr, "validate pods:", err)
		os.Exit(1)
	}
	fmt.Print(text)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "pods" {
		podsCommand(os.Args[2:])
		return
	}
	dir := ".."
	switch len(os.Args) {
	case 1:
	case 2:
		dir = os.Args[1]
	default:
		fmt.Fprintln(os.Stderr, "usage: validate [DIR]")
		os.Exit(2)
	}
	summary, errs := Validate(dir)
	if len(errs) > 0 {
		for _, err := range errs {
			fmt.Fprintln(os.Stderr, "error:", err)
		}
		fmt.Fprintf(os.Stderr, "%s: %d problem(s)\n", dir, len(errs))
		os.Exit(1)
	}
	fmt.Println(summary)
}
