// The rules a sharded wsbench deployment must follow beyond "decodes as Kubernetes types":
// things a cluster would accept but that would make a run wrong or silently different
// (a non-indexed Job, a shard count that differs from the completions, an undefined
// $(VAR) left literal in the command, a Service that selects no pod). Each rule reports
// which object broke it and how; none needs a cluster.
package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxConnectionsPerPod is what one shard pod's resources are sized for (one process, one
// open file per connection).
const MaxConnectionsPerPod = 20000

// IndexEnv is the variable holding a pod's completion index.
const IndexEnv = "JOB_COMPLETION_INDEX"

// IndexFieldPaths are the downward-API sources of the completion index (the annotation,
// or the pod label that Kubernetes 1.28+ also sets).
var IndexFieldPaths = []string{
	"metadata.annotations['batch.kubernetes.io/job-completion-index']",
	"metadata.labels['batch.kubernetes.io/job-completion-index']",
}

type checker struct {
	d    *Deployment
	errs []error
}

func (c *checker) fail(o Object, format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%s: %s", o, fmt.Sprintf(format, args...)))
}

// Check applies every rule to a loaded deployment.
func Check(d *Deployment) []error {
	c := &checker{d: d}
	jobs := 0
	for _, o := range d.Objects {
		c.checkName(o)
		switch v := o.Value.(type) {
		case *batchv1.Job:
			if o.Kustomized {
				jobs++
			}
			c.checkJob(o, v)
			c.checkPodSpec(o, &v.Spec.Template.Spec, v.Spec.Template.Labels)
		case *appsv1.Deployment:
			c.checkDeployment(o, v)
			c.checkPodSpec(o, &v.Spec.Template.Spec, v.Spec.Template.Labels)
		case *corev1.Pod:
			c.checkPodSpec(o, &v.Spec, v.Labels)
		case *corev1.Service:
			c.checkService(o, v)
		case *corev1.PersistentVolumeClaim:
			if len(v.Spec.AccessModes) == 0 {
				c.fail(o, "spec.accessModes is empty")
			}
		}
	}
	if jobs != 1 {
		c.errs = append(c.errs, fmt.Errorf("%s: lists %d Jobs, want exactly one (the shards)", KustomizationFile, jobs))
	}
	c.checkImages()
	return c.errs
}

func (c *checker) checkName(o Object) {
	var problems []string
	if _, isService := o.Value.(*corev1.Service); isService {
		problems = validation.IsDNS1035Label(o.Name)
	} else {
		problems = validation.IsDNS1123Subdomain(o.Name)
	}
	for _, p := range problems {
		c.fail(o, "metadata.name %q: %s", o.Name, p)
	}
}

func (c *checker) checkJob(o Object, job *batchv1.Job) {
	spec := job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		c.fail(o, "spec.completionMode must be Indexed (each pod needs its own shard index)")
	}
	if spec.Completions == nil || spec.Parallelism == nil {
		c.fail(o, "spec.completions and spec.parallelism must both be set")
		return
	}
	completions := int64(*spec.Completions)
	if *spec.Parallelism != *spec.Completions {
		c.fail(o, "spec.parallelism (%d) must equal spec.completions (%d): every shard runs at once",
			*spec.Parallelism, completions)
	}
	if spec.Suspend == nil || !*spec.Suspend {
		c.fail(o, "spec.suspend must be true: the Job starts only after START_AT is set (README.md)")
	}
	if spec.BackoffLimitPerIndex == nil || *spec.BackoffLimitPerIndex != 0 {
		c.fail(o, "spec.backoffLimitPerIndex must be 0: a retried shard would start after the others")
	}
	pod := spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		c.fail(o, "spec.template.spec.restartPolicy must be Never, not %q", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		c.fail(o, "the pod must have exactly one container (one wsbench process per pod), has %d", len(pod.Containers))
		return
	}
	container := pod.Containers[0]
	c.checkIndexEnv(o, container)
	c.checkShardCommand(o, completions, pod, container)
}

func (c *checker) checkIndexEnv(o Object, container corev1.Container) {
	for _, env := range container.Env {
		if env.Name != IndexEnv {
			continue
		}
		if env.ValueFrom == nil || env.ValueFrom.FieldRef == nil {
			c.fail(o, "env %s must come from the downward API (fieldRef)", IndexEnv)
			return
		}
		for _, path := range IndexFieldPaths {
			if env.ValueFrom.FieldRef.FieldPath == path {
				return
			}
		}
		c.fail(o, "env %s reads %q, want %s", IndexEnv, env.ValueFrom.FieldRef.FieldPath, IndexFieldPaths[0])
		return
	}
	c.fail(o, "container %q does not define env %s", container.Name, IndexEnv)
}

// wsbenchRun is the `wsbench run` command line found in a container's command and args.
type wsbenchRun struct {
	positional []string
	flags      map[string]string
}

// findWsbenchRun finds `wsbench run …` in the container's command and args, either as
// argv (ENTRYPOINT wsbench, args [run, …]) or as a line of a `sh -c` script.
func findWsbenchRun(container corev1.Container) (*wsbenchRun, bool) {
	argv := append(append([]string{}, container.Command...), container.Args...)
	var words []string
	if len(container.Command) == 0 && len(argv) > 0 && argv[0] == "run" {
		words = argv
	} else {
		script := strings.ReplaceAll(strings.Join(argv, "\n"), "\\\n", " ")
		for _, line := range strings.Split(script, "\n") {
			fields := strings.Fields(line)
			for i := 0; i+1 < len(fields); i++ {
				if (fields[i] == "wsbench" || strings.HasSuffix(fields[i], "/wsbench")) && fields[i+1] == "run" {
					words = fields[i+1:]
					break
				}
			}
			if words != nil {
				break
			}
		}
	}
	if words == nil {
		return nil, false
	}
	run := &wsbenchRun{flags: map[string]string{}}
	for i := 1; i < len(words); i++ {
		word := strings.Trim(words[i], `"'`)
		switch {
		case word == "&" || word == "&&" || word == ";" || word == "|" || word == "||":
			return run, true
		case strings.HasPrefix(word, "--"):
			name, value, hasValue := strings.Cut(word, "=")
			if !hasValue && i+1 < len(words) && !strings.HasPrefix(words[i+1], "--") && isValued(name) {
				value = strings.Trim(words[i+1], `"'`)
				i++
			}
			run.flags[name] = value
		default:
			run.positional = append(run.positional, word)
		}
	}
	return run, true
}

// isValued tells the flags of `wsbench run` that take a value from those that do not.
func isValued(flag string) bool {
	switch flag {
	case "--binary", "--text", "--insecure", "--find-max-rate", "--print-result", "--quiet", "--reconnect",
		"--no-probe", "--http2":
		return false
	}
	return true
}

func (c *checker) checkShardCommand(o Object, completions int64, pod corev1.PodSpec, container corev1.Container) {
	run, ok := findWsbenchRun(container)
	if !ok {
		c.fail(o, "container %q does not run `wsbench run`", container.Name)
		return
	}
	indexRef := "$(" + IndexEnv + ")"
	shard := run.flags["--shard"]
	wantShard := fmt.Sprintf("%s/%d", indexRef, completions)
	if shard != wantShard {
		c.fail(o, "`wsbench run` has --shard %q, want %q (the completion index of %d completions)",
			shard, wantShard, completions)
	}
	if connections, err := strconv.ParseInt(run.flags["--connections"], 10, 64); err != nil {
		c.fail(o, "`wsbench run` needs a numeric --connections, has %q", run.flags["--connections"])
	} else if perPod := (connections + completions - 1) / completions; perPod > MaxConnectionsPerPod {
		c.fail(o, "--connections %d over %d shards is %d per pod; pods are sized for at most %d",
			connections, completions, perPod, MaxConnectionsPerPod)
	}
	startAt := run.flags["--start-at"]
	if startAt != "$(START_AT)" {
		c.fail(o, "`wsbench run` has --start-at %q, want \"$(START_AT)\" so all shards begin together", startAt)
	} else {
		c.checkStartAtEnv(o, container)
	}
	c.checkResultPath(o, run.flags["--json"], indexRef, pod, container)
	c.checkTargetURL(o, run)
}

func (c *checker) checkStartAtEnv(o Object, container corev1.Container) {
	for _, env := range container.Env {
		if env.Name != "START_AT" {
			continue
		}
		if env.ValueFrom != nil && env.ValueFrom.ConfigMapKeyRef != nil {
			ref := env.ValueFrom.ConfigMapKeyRef
			cm, found := c.find("ConfigMap", ref.Name)
			if !found {
				c.fail(o, "env START_AT reads ConfigMap %q, which is not in the kustomization", ref.Name)
			} else if _, hasKey := cm.Value.(*corev1.ConfigMap).Data[ref.Key]; !hasKey {
				c.fail(o, "env START_AT reads key %q, which ConfigMap %q does not have", ref.Key, ref.Name)
			}
		}
		return
	}
	c.fail(o, "container %q does not define env START_AT", container.Name)
}

func (c *checker) checkResultPath(o Object, path, indexRef string, pod corev1.PodSpec, container corev1.Container) {
	if !strings.Contains(path, indexRef) {
		c.fail(o, "--json %q must contain %s so each shard writes its own file", path, indexRef)
		return
	}
	for _, mount := range container.VolumeMounts {
		dir := strings.TrimSuffix(mount.MountPath, "/") + "/"
		if !strings.HasPrefix(path, dir) {
			continue
		}
		if mount.ReadOnly {
			c.fail(o, "--json %q is on the read-only mount %s", path, mount.MountPath)
		}
		for _, volume := range pod.Volumes {
			if volume.Name != mount.Name {
				continue
			}
			if volume.PersistentVolumeClaim == nil {
				c.fail(o, "--json %q is on volume %q, which is not a PersistentVolumeClaim", path, volume.Name)
				return
			}
			claim, found := c.find("PersistentVolumeClaim", volume.PersistentVolumeClaim.ClaimName)
			if found && !hasAccessMode(claim.Value.(*corev1.PersistentVolumeClaim), corev1.ReadWriteMany) {
				c.fail(o, "PersistentVolumeClaim %q must be ReadWriteMany: the shards write from many nodes at once",
					claim.Name)
			}
			return
		}
		return
	}
	c.fail(o, "--json %q is not on any mounted volume: the result would be lost with the pod", path)
}

func hasAccessMode(claim *corev1.PersistentVolumeClaim, mode corev1.PersistentVolumeAccessMode) bool {
	for _, m := range claim.Spec.AccessModes {
		if m == mode {
			return true
		}
	}
	return false
}

// checkTargetURL checks that ws://HOST:PORT names a Service of this deployment and one of
// its ports.
func (c *checker) checkTargetURL(o Object, run *wsbenchRun) {
	var url string
	for _, word := range run.positional {
		if strings.Contains(word, "://") {
			url = word
		}
	}
	if url == "" {
		c.fail(o, "`wsbench run` has no target URL: it would benchmark a server inside its own pod")
		return
	}
	scheme, rest, _ := strings.Cut(url, "://")
	if scheme != "ws" && scheme != "wss" {
		c.fail(o, "target URL %q is not ws:// or wss://", url)
		return
	}
	hostPort, _, _ := strings.Cut(rest, "/")
	host, portText, hasPort := strings.Cut(hostPort, ":")
	if !hasPort {
		portText = map[string]string{"ws": "80", "wss": "443"}[scheme]
	}
	serviceName, _, _ := strings.Cut(host, ".")
	service, found := c.find("Service", serviceName)
	if !found {
		c.fail(o, "target URL %q: no Service %q in the kustomization", url, serviceName)
		return
	}
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		c.fail(o, "target URL %q has a bad port", url)
		return
	}
	for _, p := range service.Value.(*corev1.Service).Spec.Ports {
		if int64(p.Port) == port {
			return
		}
	}
	c.fail(o, "target URL %q: Service %q has no port %d", url, serviceName, port)
}

func (c *checker) checkDeployment(o Object, d *appsv1.Deployment) {
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
		c.fail(o, "spec.selector.matchLabels is empty")
	} else if !subset(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		c.fail(o, "spec.selector.matchLabels %v do not match the pod template's labels %v",
			d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	for _, container := range d.Spec.Template.Spec.Containers {
		if len(container.Args) == 0 || container.Args[0] != "serve" {
			continue
		}
		for i := 0; i+1 < len(container.Args); i++ {
			if container.Args[i] != "--port" {
				continue
			}
			port, err := strconv.ParseInt(container.Args[i+1], 10, 32)
			if err != nil || !hasContainerPort(container, int32(port)) {
				c.fail(o, "`wsbench serve --port %s` is not one of container %q's ports",
					container.Args[i+1], container.Name)
			}
		}
	}
}

func hasContainerPort(container corev1.Container, port int32) bool {
	for _, p := range container.Ports {
		if p.ContainerPort == port {
			return true
		}
	}
	return false
}

func (c *checker) checkService(o Object, s *corev1.Service) {
	if len(s.Spec.Selector) == 0 {
		c.fail(o, "spec.selector is empty: it would select no pod")
		return
	}
	var matched []*appsv1.Deployment
	for _, other := range c.d.Objects {
		if d, ok := other.Value.(*appsv1.Deployment); ok && subset(s.Spec.Selector, d.Spec.Template.Labels) {
			matched = append(matched, d)
		}
	}
	if len(matched) == 0 {
		c.fail(o, "spec.selector %v matches the pod labels of no Deployment", s.Spec.Selector)
		return
	}
	if len(s.Spec.Ports) == 0 {
		c.fail(o, "spec.ports is empty")
	}
	for _, port := range s.Spec.Ports {
		target := port.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(port.Port)
		}
		for _, d := range matched {
			if !servesPort(d.Spec.Template.Spec, target) {
				c.fail(o, "port %d targets %s, which Deployment %q's containers do not expose",
					port.Port, target.String(), d.Name)
			}
		}
	}
}

func servesPort(pod corev1.PodSpec, target intstr.IntOrString) bool {
	for _, container := range pod.Containers {
		for _, p := range container.Ports {
			if (target.Type == intstr.String && p.Name == target.StrVal) ||
				(target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
				return true
			}
		}
	}
	return false
}

// checkPodSpec holds the rules for every pod template: sized containers, defined $(VAR)
// references, volumes and claims that exist, spread constraints that select the pod.
func (c *checker) checkPodSpec(o Object, pod *corev1.PodSpec, labels map[string]string) {
	if len(pod.Containers) == 0 {
		c.fail(o, "the pod has no containers")
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
		if v.PersistentVolumeClaim != nil {
			if _, found := c.find("PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName); !found {
				c.fail(o, "volume %q claims %q, which is not defined here", v.Name, v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	for _, container := range pod.Containers {
		if container.Name == "" || container.Image == "" {
			c.fail(o, "every container needs a name and an image")
		}
		for _, resource := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := container.Resources.Requests[resource]; !ok {
				c.fail(o, "container %q has no %s request", container.Name, resource)
			}
			if _, ok := container.Resources.Limits[resource]; !ok {
				c.fail(o, "container %q has no %s limit", container.Name, resource)
			}
		}
		for _, mount := range container.VolumeMounts {
			if _, ok := volumes[mount.Name]; !ok {
				c.fail(o, "container %q mounts volume %q, which the pod does not define", container.Name, mount.Name)
			}
		}
		c.checkVarRefs(o, container)
	}
	for _, spread := range pod.TopologySpreadConstraints {
		if spread.LabelSelector == nil || !subset(spread.LabelSelector.MatchLabels, labels) {
			c.fail(o, "a topologySpreadConstraint's labelSelector does not select the pod itself")
		}
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkVarRefs: Kubernetes replaces $(NAME) in command and args only when NAME is an env
// var of the container, and leaves the text as it is otherwise; in a `sh -c` script that
// text would then run NAME as a command.
func (c *checker) checkVarRefs(o Object, container corev1.Container) {
	defined := map[string]bool{}
	for _, env := range container.Env {
		defined[env.Name] = true
	}
	for _, from := range container.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		if cm, found := c.find("ConfigMap", from.ConfigMapRef.Name); found {
			for key := range cm.Value.(*corev1.ConfigMap).Data {
				defined[from.Prefix+key] = true
			}
		}
	}
	for _, text := range append(append([]string{}, container.Command...), container.Args...) {
		text = strings.ReplaceAll(text, "$$", "")
		for _, match := range varRef.FindAllStringSubmatch(text, -1) {
			if !defined[match[1]] {
				c.fail(o, "container %q uses $(%s), but defines no env var %s", container.Name, match[1], match[1])
			}
		}
	}
}

// checkImages: every image the kustomization rewrites is used, so a rename of the image
// in the manifests cannot leave the registry setting silently unused.
func (c *checker) checkImages() {
	used := map[string]bool{}
	for _, o := range c.d.Objects {
		if !o.Kustomized {
			continue
		}
		for _, container := range containersOf(o) {
			used[imageName(container.Image)] = true
		}
	}
	for _, image := range c.d.Kustomization.Images {
		if !used[image.Name] {
			c.errs = append(c.errs, fmt.Errorf("%s: images entry %q matches no container image", KustomizationFile, image.Name))
		}
	}
}

func containersOf(o Object) []corev1.Container {
	switch v := o.Value.(type) {
	case *batchv1.Job:
		return v.Spec.Template.Spec.Containers
	case *appsv1.Deployment:
		return v.Spec.Template.Spec.Containers
	case *corev1.Pod:
		return v.Spec.Containers
	}
	return nil
}

// imageName strips the tag and digest: registry.example.com:5000/wsbench:0.1 → registry.example.com:5000/wsbench.
func imageName(image string) string {
	image, _, _ = strings.Cut(image, "@")
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		image = image[:colon]
	}
	return image
}

func (c *checker) find(kind, name string) (Object, bool) {
	for _, o := range c.d.Objects {
		if o.Kind == kind && o.Name == name {
			return o, true
		}
	}
	return Object{}, false
}

func subset(small, big map[string]string) bool {
	for k, v := range small {
		if big[k] != v {
			return false
		}
	}
	return len(small) > 0
}
