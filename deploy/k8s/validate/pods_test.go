// Tests of the pod renderer behind deploy/k8s/play.sh: the shard Pods carry what the Job
// controller would give them, and $(VAR)s expand by Kubernetes' rules.
package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

func TestVarsExpandAsKubernetesDoes(t *testing.T) {
	env := map[string]string{"I": "3", "START_AT": "17"}
	got := expand([]string{"$(I)/50", "--start-at=$(START_AT)", "$$(I)", "$(UNSET)", "a$b", "$(I"}, env)
	want := []string{"3/50", "--start-at=17", "$(I)", "$(UNSET)", "a$b", "$(I"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("expand gave %q, want %q", got, want)
	}
}

func TestShardPodsAreTheJobsPodsPerIndex(t *testing.T) {
	text, err := renderPods(shippedDir, PodPlay{
		Shards: 3, Connections: 300, Port: 18080, Image: "localhost/wsbench:test",
		ResultsDir: "/tmp/results", StartAt: 1700000000000, ExtraArgs: []string{"--duration", "1s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(strings.TrimPrefix(text, "---\n"), "---\n")
	if len(docs) != 5 {
		t.Fatalf("want the ConfigMap, 3 shard Pods and the target Pod, got %d documents", len(docs))
	}
	var pod corev1.Pod
	if err := sigsyaml.UnmarshalStrict([]byte(docs[3]), &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Name != "wsbench-shards-2" || pod.Annotations[IndexAnnotation] != "2" || !pod.Spec.HostNetwork {
		t.Errorf("shard 2 is %s with index %q", pod.Name, pod.Annotations[IndexAnnotation])
	}
	args := strings.Join(pod.Spec.Containers[0].Args, " ")
	for _, want := range []string{"run echo ws://127.0.0.1:18080 ", "--connections 300 ", "--shard 2/3 ",
		"--start-at 1700000000000 ", "--json /results/shard-2.json ", "--duration 1s"} {
		if !strings.Contains(args, want) {
			t.Errorf("shard 2's args %q lack %q", args, want)
		}
	}
	if v := pod.Spec.Volumes[0]; v.HostPath == nil || v.HostPath.Path != "/tmp/results" {
		t.Errorf("the results volume is %+v, want the host folder", v)
	}
	var target corev1.Pod
	if err := sigsyaml.UnmarshalStrict([]byte(docs[4]), &target); err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(target.Spec.Containers[0].Args, " "); args != "serve --host 127.0.0.1 --port 18080 --threads 1" {
		t.Errorf("the target runs %q", args)
	}
	if len(target.Spec.Containers[0].Ports) != 0 {
		t.Error("the target keeps ports:, which podman refuses with host networking")
	}
}
