// Rendering the shipped manifests into the Pods a cluster would run, so deploy/k8s/play.sh
// can run them with `podman kube play` on one machine (podman plays Pods, not Jobs or
// Deployments). Each shard Pod is the Job's pod template with what the Job controller adds
// (the completion-index annotation and label, the pod name), and the target Pod is the
// Deployment's template. Only what one machine needs differs, and every change is listed
// in renderPods: host networking, the target URL, the run's size, the results volume as a
// host folder. The $(VAR)s of the args are expanded here as the kubelet does, because
// podman 4.3 leaves them as they are.
package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// IndexAnnotation is where the Job controller puts a pod's completion index.
const IndexAnnotation = "batch.kubernetes.io/job-completion-index"

// PodPlay is what one machine changes in the shipped manifests.
type PodPlay struct {
	Shards      int
	Connections int64
	Port        int
	Image       string
	ResultsDir  string // host folder mounted where the Job mounts its results claim
	StartAt     int64  // ms since the Unix epoch: the ConfigMap's START_AT
	ExtraArgs   []string
}

// renderPods returns the ConfigMap, the shard Pods and the target Pod as one multi-document
// YAML for `podman kube play`. The target comes last, so the shards start before their
// server and must wait for it (--wait-for-target), as pods of a cluster may.
func renderPods(dir string, play PodPlay) (string, error) {
	d, errs := Load(dir)
	if len(errs) > 0 {
		return "", fmt.Errorf("%s: %v", dir, errs)
	}
	var job *batchv1.Job
	var target *appsv1.Deployment
	var start *corev1.ConfigMap
	for _, o := range d.Objects {
		switch v := o.Value.(type) {
		case *batchv1.Job:
			job = v
		case *appsv1.Deployment:
			target = v
		case *corev1.ConfigMap:
			if o.Kustomized {
				start = v
			}
		}
	}
	if job == nil || target == nil || start == nil {
		return "", fmt.Errorf("%s: needs the Job, the target Deployment and the start ConfigMap", dir)
	}
	targetURL := fmt.Sprintf("ws://127.0.0.1:%d", play.Port)

	config := start.DeepCopy()
	config.Data = map[string]string{}
	for key := range start.Data {
		config.Data[key] = strconv.FormatInt(play.StartAt, 10)
	}
	docs := []any{config}
	for i := 0; i < play.Shards; i++ {
		pod, err := shardPod(job, config, play, i, targetURL)
		if err != nil {
			return "", err
		}
		docs = append(docs, pod)
	}
	docs = append(docs, targetPod(target, play))

	var out strings.Builder
	for _, doc := range docs {
		text, err := sigsyaml.Marshal(doc)
		if err != nil {
			return "", err
		}
		out.WriteString("---\n")
		out.Write(text)
	}
	return out.String(), nil
}

// shardPod is the pod the Job controller would create for completion index i.
func shardPod(job *batchv1.Job, config *corev1.ConfigMap, play PodPlay, i int, targetURL string) (*corev1.Pod, error) {
	index := strconv.Itoa(i)
	template := job.Spec.Template.DeepCopy()
	meta := template.ObjectMeta
	meta.Name = fmt.Sprintf("%s-%d", job.Name, i)
	meta.Annotations = merged(meta.Annotations, map[string]string{IndexAnnotation: index})
	meta.Labels = merged(meta.Labels, map[string]string{IndexAnnotation: index, "job-name": job.Name})
	spec := template.Spec
	onOneMachine(&spec, play.Image)
	spec.Volumes = hostResults(spec.Volumes, play.ResultsDir)

	container := &spec.Containers[0]
	shards := strconv.Itoa(play.Shards)
	var args []string
	for j := 0; j < len(container.Args); j++ {
		arg := container.Args[j]
		switch {
		case strings.Contains(arg, "://"):
			arg = targetURL
		case arg == "--connections" && j+1 < len(container.Args):
			args = append(args, arg, strconv.FormatInt(play.Connections, 10))
			j++
			continue
		case arg == "--shard" && j+1 < len(container.Args):
			count := strings.LastIndex(container.Args[j+1], "/")
			if count < 0 {
				return nil, fmt.Errorf("the Job's --shard %q has no /N", container.Args[j+1])
			}
			args = append(args, arg, container.Args[j+1][:count+1]+shards)
			j++
			continue
		}
		args = append(args, arg)
	}
	args = append(args, play.ExtraArgs...)
	env, err := containerEnv(container, meta, config)
	if err != nil {
		return nil, err
	}
	container.Args = expand(args, env)
	container.Command = expand(container.Command, env)
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: meta.Name, Labels: meta.Labels, Annotations: meta.Annotations},
		Spec:       spec,
	}, nil
}

// targetPod is the Deployment's pod, its server listening on the loopback port.
func targetPod(target *appsv1.Deployment, play PodPlay) *corev1.Pod {
	template := target.Spec.Template.DeepCopy()
	spec := template.Spec
	onOneMachine(&spec, play.Image)
	spec.RestartPolicy = corev1.RestartPolicyNever
	for c := range spec.Containers {
		container := &spec.Containers[c]
		// Host networking publishes no ports; the probes would need tools the image lacks.
		container.Ports = nil
		container.ReadinessProbe = nil
		container.LivenessProbe = nil
		// The shipped sizes are a cluster node's; one loopback machine gets one core.
		one := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
		container.Resources = corev1.ResourceRequirements{Requests: one, Limits: one.DeepCopy()}
		values := map[string]string{"--host": "127.0.0.1", "--port": strconv.Itoa(play.Port), "--threads": "1"}
		for j := 0; j+1 < len(container.Args); j++ {
			if value, ok := values[container.Args[j]]; ok {
				container.Args[j+1] = value
			}
		}
	}
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: target.Name, Labels: template.Labels},
		Spec:       spec,
	}
}

// onOneMachine: host networking (loopback, no Service), the local image, no spreading.
func onOneMachine(spec *corev1.PodSpec, image string) {
	spec.HostNetwork = true
	spec.TopologySpreadConstraints = nil
	for c := range spec.Containers {
		spec.Containers[c].Image = image
		spec.Containers[c].ImagePullPolicy = corev1.PullNever
	}
}

// hostResults replaces the results claim by a host folder.
func hostResults(volumes []corev1.Volume, dir string) []corev1.Volume {
	kind := corev1.HostPathDirectory
	for v := range volumes {
		if volumes[v].PersistentVolumeClaim != nil {
			volumes[v].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &kind}}
		}
	}
	return volumes
}

// containerEnv resolves the container's env as the kubelet would: literal values, the
// downward API's annotations and labels, and ConfigMap keys.
func containerEnv(container *corev1.Container, meta metav1.ObjectMeta, config *corev1.ConfigMap) (map[string]string, error) {
	field := regexp.MustCompile(`^metadata\.(annotations|labels)\['([^']+)'\]$`)
	env := map[string]string{}
	for _, e := range container.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expandOne(e.Value, env)
		case e.ValueFrom.FieldRef != nil:
			m := field.FindStringSubmatch(e.ValueFrom.FieldRef.FieldPath)
			if m == nil {
				return nil, fmt.Errorf("env %s: field %q is not rendered here", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			source := meta.Annotations
			if m[1] == "labels" {
				source = meta.Labels
			}
			env[e.Name] = source[m[2]]
		case e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name == config.Name:
			env[e.Name] = config.Data[e.ValueFrom.ConfigMapKeyRef.Key]
		default:
			return nil, fmt.Errorf("env %s: its source is not rendered here", e.Name)
		}
	}
	return env, nil
}

// expand replaces $(NAME) by NAME's value where NAME is defined and $$ by $, leaving other
// text as it is: Kubernetes' rule for command and args.
func expand(words []string, env map[string]string) []string {
	if words == nil {
		return nil
	}
	out := make([]string, len(words))
	for i, word := range words {
		out[i] = expandOne(word, env)
	}
	return out
}

func expandOne(word string, env map[string]string) string {
	var out strings.Builder
	for i := 0; i < len(word); i++ {
		if word[i] != '$' || i+1 == len(word) {
			out.WriteByte(word[i])
			continue
		}
		switch next := word[i+1]; {
		case next == '$':
			out.WriteByte('$')
			i++
		case next == '(':
			end := strings.IndexByte(word[i:], ')')
			if end < 0 {
				out.WriteString(word[i:])
				return out.String()
			}
			name := word[i+2 : i+end]
			if value, ok := env[name]; ok {
				out.WriteString(value)
			} else {
				out.WriteString(word[i : i+end+1])
			}
			i += end
		default:
			out.WriteByte('$')
		}
	}
	return out.String()
}

func merged(base, extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}
