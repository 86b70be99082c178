// Tests of the validator: the shipped manifests pass, and each kind of mistake it exists
// to catch fails it. Most bad fixtures are the shipped files with one edit (so they stay
// in step with the real manifests); testdata/field-typo is a bad fixture kept on disk.
package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const shippedDir = ".."

func TestShippedManifestsAreValid(t *testing.T) {
	summary, errs := Validate(shippedDir)
	for _, err := range errs {
		t.Error(err)
	}
	if !strings.Contains(summary, "1 Job") || !strings.Contains(summary, "1 Service") {
		t.Errorf("summary %q misses the Job or the Service", summary)
	}
}

func TestFieldTypoFixtureIsRejected(t *testing.T) {
	_, errs := Validate("testdata/field-typo")
	assertReported(t, errs, `unknown field "spec.completionMod"`)
}

// mutation is one edit of one shipped file and the problem it must cause.
type mutation struct {
	name string
	file string
	old  string
	new  string
	want string
}

var mutations = []mutation{
	{"misspelt field", "shards-job.yaml", "completionMode: Indexed", "completionMod: Indexed",
		`unknown field "spec.completionMod"`},
	{"field in the wrong case", "shards-job.yaml", "  parallelism: 50", "  Parallelism: 50",
		`unknown field "spec.Parallelism"`},
	{"field at the wrong level", "target.yaml", "      enableServiceLinks: false", "      enableServiceLinks: false\n      replicas: 2",
		`unknown field "spec.template.spec.replicas"`},
	{"duplicate key", "results-pvc.yaml", "      storage: 1Gi", "      storage: 1Gi\n      storage: 2Gi",
		`key "storage" already set`},
	{"malformed quantity", "shards-job.yaml", "              memory: 512Mi\n            limits", "              memory: 512 MB\n            limits",
		"quantities must match"},
	{"misspelt kustomization field", "kustomization.yaml", "resources:", "resource:",
		`unknown field "resource"`},
	{"unknown kind", "start-at.yaml", "kind: ConfigMap", "kind: ConfigMapp",
		`no kind "ConfigMapp"`},
	{"job not indexed", "shards-job.yaml", "completionMode: Indexed", "completionMode: NonIndexed",
		"must be Indexed"},
	{"parallelism below completions", "shards-job.yaml", "  parallelism: 50", "  parallelism: 25",
		"must equal spec.completions"},
	{"job not suspended", "shards-job.yaml", "  suspend: true", "  suspend: false",
		"spec.suspend must be true"},
	{"retries allowed", "shards-job.yaml", "backoffLimitPerIndex: 0", "backoffLimitPerIndex: 2",
		"backoffLimitPerIndex must be 0"},
	{"shard count differs from completions", "shards-job.yaml", "$(JOB_COMPLETION_INDEX)/50", "$(JOB_COMPLETION_INDEX)/40",
		`want "$(JOB_COMPLETION_INDEX)/50"`},
	{"shard index hard-coded", "shards-job.yaml", `"--shard", "$(JOB_COMPLETION_INDEX)/50"`, `"--shard", "0/50"`,
		`has --shard "0/50"`},
	{"index from the wrong annotation", "shards-job.yaml", "batch.kubernetes.io/job-completion-index']", "batch.kubernetes.io/completion-index']",
		"env JOB_COMPLETION_INDEX reads"},
	{"index env missing", "shards-job.yaml", "- name: JOB_COMPLETION_INDEX", "- name: COMPLETION_INDEX",
		"uses $(JOB_COMPLETION_INDEX), but defines no env var"},
	{"start-at not shared", "shards-job.yaml", `"--start-at", "$(START_AT)"`, `"--start-at", "0"`,
		`want "$(START_AT)"`},
	{"start-at key missing", "start-at.yaml", "  START_AT:", "  START:",
		`key "START_AT", which ConfigMap "wsbench-start" does not have`},
	{"result file shared by all shards", "shards-job.yaml", `"--json", "/results/shard-$(JOB_COMPLETION_INDEX).json"`, `"--json", "/results/shard.json"`,
		"so each shard writes its own file"},
	{"result file off the volume", "shards-job.yaml", `"--json", "/results/shard-`, `"--json", "/tmp/shard-`,
		"is not on any mounted volume"},
	{"too many connections per pod", "shards-job.yaml", `"--connections", "1000000"`, `"--connections", "2000000"`,
		"40000 per pod"},
	{"target is not the Service", "shards-job.yaml", "ws://wsbench-target:8080", "ws://wsbench-server:8080",
		`no Service "wsbench-server"`},
	{"target port is not the Service's", "shards-job.yaml", "ws://wsbench-target:8080", "ws://wsbench-target:9090",
		"has no port 9090"},
	{"service selects no pod", "target.yaml", "  selector:\n    app.kubernetes.io/name: wsbench\n    app.kubernetes.io/component: target\n  ports",
		"  selector:\n    app.kubernetes.io/name: wsbench\n    app.kubernetes.io/component: server\n  ports",
		"matches the pod labels of no Deployment"},
	{"service targets a missing port", "target.yaml", "      targetPort: ws", "      targetPort: http",
		"targets http"},
	{"server listens elsewhere", "target.yaml", `"--port", "8080"`, `"--port", "9000"`,
		"`wsbench serve --port 9000` is not one of"},
	{"claim not read-write-many", "results-pvc.yaml", "    - ReadWriteMany", "    - ReadWriteOnce",
		"must be ReadWriteMany"},
	{"claim name mismatch", "results-reader.yaml", "      claimName: wsbench-results", "      claimName: wsbench-result",
		`claims "wsbench-result", which is not defined here`},
	{"no memory limit", "target.yaml", "              cpu: \"8\"\n              memory: 12Gi\n          securityContext",
		"              cpu: \"8\"\n          securityContext", "has no memory limit"},
	{"image setting unused", "kustomization.yaml", "  - name: wsbench\n", "  - name: wsbenchx\n",
		`images entry "wsbenchx" matches no container image`},
	{"job missing from the kustomization", "kustomization.yaml", "  - shards-job.yaml\n", "",
		"lists 0 Jobs"},
}

func TestEachMistakeIsReported(t *testing.T) {
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			dir := copyShipped(t)
			path := filepath.Join(dir, m.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(data), m.old); n != 1 {
				t.Fatalf("%s holds %q %d times, want once: update this mutation", m.file, m.old, n)
			}
			edited := strings.Replace(string(data), m.old, m.new, 1)
			if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			_, errs := Validate(dir)
			assertReported(t, errs, m.want)
		})
	}
}

func TestImageName(t *testing.T) {
	for image, want := range map[string]string{
		"wsbench":       "wsbench",
		"wsbench:0.1.0": "wsbench",
		"registry.example.com:5000/team/wsbench:v1": "registry.example.com:5000/team/wsbench",
		"registry.example.com:5000/wsbench":         "registry.example.com:5000/wsbench",
		"wsbench@sha256:0123":                       "wsbench",
	} {
		if got := imageName(image); got != want {
			t.Errorf("imageName(%q) = %q, want %q", image, got, want)
		}
	}
}

func copyShipped(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(shippedDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", shippedDir, err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(file)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func assertReported(t *testing.T, errs []error, want string) {
	t.Helper()
	var all []string
	for _, err := range errs {
		if strings.Contains(err.Error(), want) {
			return
		}
		all = append(all, err.Error())
	}
	t.Errorf("no problem mentions %q; reported:\n  %s", want, strings.Join(all, "\n  "))
}
