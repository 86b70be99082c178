// End-to-end test of result collection from pod logs, without a cluster: the shipped Job's
// own arguments (with $(VAR)s substituted, as Kubernetes does) run once per shard against a
// stand-in `wsbench` that writes a result file and, for --print-result, prints it between
// the marker lines the real one prints (wsbench::result::between_markers; deploy/k8s/play.sh
// checks the real binary's log the same way). Its output becomes that pod's log, and
// scripts/k8s-collect-results.sh reads those logs through a stand-in `kubectl`. It proves
// the result comes back byte for byte, and that a failed shard's missing result is reported.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

const collectScript = "../../../scripts/k8s-collect-results.sh"

// fakeWsbench writes a multi-line result to its --json path unless FAKE_EXIT is set, in
// which case it fails without one, as a shard that could not connect would.
const fakeWsbench = `#!/bin/sh
json=""
print=false
while [ $# -gt 0 ]; do
    case "$1" in
        --json) json="$2"; shift 2 ;;
        --print-result) print=true; shift ;;
        *) shift ;;
    esac
done
echo "wsbench echo (stand-in) report line"
if [ -n "${FAKE_EXIT:-}" ]; then echo "stand-in failure" >&2; exit "$FAKE_EXIT"; fi
printf '{\n  "file": "%s",\n  "histogram": "HISTFAAAA0J4nC1TS4x"\n}\n' "$json" > "$json"
if $print; then
    name="$(basename "$json")"
    echo "----- BEGIN wsbench result $name -----"
    cat "$json"
    echo "----- END wsbench result $name -----"
fi
`

// fakeKubectl answers the three queries the collect script makes from files in $FAKE_DIR.
const fakeKubectl = `#!/usr/bin/env bash
if [ "$1" = "--namespace" ]; then shift 2; fi
case "$1 $2" in
    "get job") printf '%s' "$(cat "$FAKE_DIR/completions")" ;;
    "get pods") cat "$FAKE_DIR/pods" ;;
    "logs "*) cat "$FAKE_DIR/${2#pod/}.log" ;;
    *) echo "fake kubectl: unexpected $*" >&2; exit 1 ;;
esac
`

func TestCollectScriptReadsTheResultsTheJobPrints(t *testing.T) {
	for _, tool := range []string{"sh", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	args := shippedShardArgs(t)
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	fake := filepath.Join(root, "cluster")
	results := filepath.Join(root, "results")
	for _, dir := range []string{bin, fake, results} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeExecutable(t, filepath.Join(bin, "wsbench"), fakeWsbench)
	writeExecutable(t, filepath.Join(bin, "kubectl"), fakeKubectl)
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")

	const shards = 3
	const failing = 2
	var pods strings.Builder
	for i := 0; i < shards; i++ {
		substitute := strings.NewReplacer(
			"$(JOB_COMPLETION_INDEX)", fmt.Sprint(i),
			"$(START_AT)", "1700000000000",
			"/results/", results+"/",
		)
		shardArgs := make([]string, len(args))
		for j, arg := range args {
			shardArgs[j] = substitute.Replace(arg)
		}
		cmd := exec.Command(filepath.Join(bin, "wsbench"), shardArgs...)
		cmd.Env = append(os.Environ(), "PATH="+path)
		if i == failing {
			cmd.Env = append(cmd.Env, "FAKE_EXIT=3")
		}
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case i == failing && !(errors.As(err, &exit) && exit.ExitCode() == 3):
			t.Fatalf("shard %d: the shard must exit with wsbench's status 3, got %v\n%s", i, err, log.String())
		case i != failing && err != nil:
			t.Fatalf("shard %d: the shard failed: %v\n%s", i, err, log.String())
		}
		pod := fmt.Sprintf("wsbench-shards-%d-x%d", i, 7*i)
		fmt.Fprintf(&pods, "%s %d\n", pod, i)
		writeFile(t, filepath.Join(fake, pod+".log"), log.String())
	}
	writeFile(t, filepath.Join(fake, "pods"), pods.String())
	writeFile(t, filepath.Join(fake, "completions"), fmt.Sprint(shards))

	out := filepath.Join(root, "collected")
	cmd := exec.Command("bash", collectScript, "--from", "logs", out)
	cmd.Env = append(os.Environ(), "PATH="+path, "FAKE_DIR="+fake)
	output, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the collect script must fail when a shard has no result:\n%s", output)
	}
	if !strings.Contains(string(output), "missing shard 2") || !strings.Contains(string(output), "2 of 3") {
		t.Errorf("the collect script does not name the missing shard:\n%s", output)
	}
	for i := 0; i < shards; i++ {
		collected, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("shard-%d.json", i)))
		if i == failing {
			if err == nil {
				t.Errorf("shard %d failed but a result was collected: %s", i, collected)
			}
			continue
		}
		if err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, output)
		}
		written, err := os.ReadFile(filepath.Join(results, fmt.Sprintf("shard-%d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		// The Job prints a newline after the file in case it lacks one; a JSON reader
		// ignores it.
		if string(bytes.TrimRight(collected, "\n")) != string(bytes.TrimRight(written, "\n")) {
			t.Errorf("shard %d: collected\n%s\nbut the shard wrote\n%s", i, collected, written)
		}
	}
}

// shippedShardArgs are the arguments of the shipped Job's container: wsbench's, since the
// image's entrypoint is wsbench and it has no shell.
func shippedShardArgs(t *testing.T) []string {
	t.Helper()
	d, errs := Load(shippedDir)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, o := range d.Objects {
		if job, ok := o.Value.(*batchv1.Job); ok {
			c := job.Spec.Template.Spec.Containers[0]
			if len(c.Command) != 0 || len(c.Args) == 0 || c.Args[0] != "run" {
				t.Fatalf("the Job's container is not `wsbench run …` as arguments of the entrypoint: %q %q", c.Command, c.Args)
			}
			hasPrint := false
			for _, arg := range c.Args {
				hasPrint = hasPrint || arg == "--print-result"
			}
			if !hasPrint {
				t.Fatalf("the Job's wsbench run lacks --print-result: its log would carry no result")
			}
			return c.Args
		}
	}
	t.Fatal("no Job in the shipped manifests")
	return nil
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeExecutable(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}
