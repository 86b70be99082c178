// Command validate checks the Kubernetes manifests of deploy/k8s without a cluster or a
// network: every document is decoded strictly into the official k8s.io/api types
// (load.go), then the rules of a sharded wsbench run are checked (checks.go). It exits 1
// and lists every problem when anything is wrong. scripts/validate-k8s.sh runs it in CI.
//
//	go run . [DIR]    (DIR defaults to deploy/k8s's path from this folder: ..)
package main

import (
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

func main() {
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
