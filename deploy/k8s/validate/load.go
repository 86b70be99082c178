// Loading deploy/k8s without a cluster: every manifest is decoded into the official
// Kubernetes Go types (k8s.io/api) in strict mode, the way an API server with
// fieldValidation=Strict decodes it, so a misspelt or misplaced field, a duplicate key or
// a malformed quantity is an error here instead of being silently dropped by kubectl.
// This file only decodes; the run-specific rules live in checks.go.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// KustomizationFile is the file `kubectl apply -k` reads.
const KustomizationFile = "kustomization.yaml"

// Kustomization is the subset of kustomize's file format deploy/k8s uses. Decoding is
// strict, so a field outside this subset is reported: extend the struct (and the checks)
// when the deployment starts using it.
type Kustomization struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Namespace  string           `json:"namespace,omitempty"`
	Resources  []string         `json:"resources"`
	Images     []KustomizeImage `json:"images,omitempty"`
}

// KustomizeImage rewrites the image of every container whose image name is Name.
type KustomizeImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// Object is one decoded manifest document and where it came from.
type Object struct {
	File  string // relative to the deployment folder
	Doc   int    // 1-based document number in the file
	Kind  string
	Name  string
	Value runtime.Object
	// Kustomized is true for objects that `kubectl apply -k` creates (listed in the
	// kustomization's resources), false for stand-alone helper manifests.
	Kustomized bool
}

func (o Object) String() string {
	if o.Doc > 1 {
		return fmt.Sprintf("%s (document %d): %s %s", o.File, o.Doc, o.Kind, o.Name)
	}
	return fmt.Sprintf("%s: %s %s", o.File, o.Kind, o.Name)
}

// Deployment is the set of manifests in one folder.
type Deployment struct {
	Dir           string
	Kustomization Kustomization
	Objects       []Object
	// Incomplete is true when some file or document could not be decoded, so rules that
	// relate objects to each other would report follow-on errors.
	Incomplete bool
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// strictDecoder is the API machinery's own YAML/JSON decoder with unknown and duplicate
// fields turned into errors; field names are matched case-sensitively, as the API server
// does (encoding/json alone would accept `Parallelism:` for `parallelism:`).
var strictDecoder = serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()

// Load decodes the kustomization in dir, every resource it lists and every other *.yaml
// file beside it (helper manifests applied by hand). All problems are returned, not just
// the first.
func Load(dir string) (*Deployment, []error) {
	d := &Deployment{Dir: dir}
	var errs []error
	kustomizationPath := filepath.Join(dir, KustomizationFile)
	data, err := os.ReadFile(kustomizationPath)
	if err != nil {
		return nil, []error{err}
	}
	if err := decodeKustomization(data, &d.Kustomization); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", KustomizationFile, err))
		d.Incomplete = true
	}
	listed := map[string]bool{}
	for _, resource := range d.Kustomization.Resources {
		clean := filepath.Clean(resource)
		if filepath.IsAbs(clean) || strings.HasPrefix(clean, "..") {
			errs = append(errs, fmt.Errorf("%s: resource %q is outside the folder", KustomizationFile, resource))
			continue
		}
		if listed[clean] {
			errs = append(errs, fmt.Errorf("%s: resource %q is listed twice", KustomizationFile, resource))
			continue
		}
		listed[clean] = true
		objects, fileErrs, incomplete := loadFile(dir, clean, true)
		d.Objects = append(d.Objects, objects...)
		errs = append(errs, fileErrs...)
		d.Incomplete = d.Incomplete || incomplete
	}
	others, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, []error{err}
	}
	sort.Strings(others)
	for _, path := range others {
		name := filepath.Base(path)
		if name == KustomizationFile || listed[name] {
			continue
		}
		objects, fileErrs, incomplete := loadFile(dir, name, false)
		d.Objects = append(d.Objects, objects...)
		errs = append(errs, fileErrs...)
		d.Incomplete = d.Incomplete || incomplete
	}
	return d, errs
}

func decodeKustomization(data []byte, k *Kustomization) error {
	jsonData, err := sigsyaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(jsonData, k)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		return fmt.Errorf("strict decoding error: %w", errors.Join(strictErrs...))
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return fmt.Errorf("apiVersion/kind are %q/%q, want kustomize.config.k8s.io/v1beta1/Kustomization",
			k.APIVersion, k.Kind)
	}
	if len(k.Resources) == 0 {
		return errors.New("lists no resources")
	}
	return nil
}

// loadFile decodes every YAML document of one file; incomplete is true when a document
// could not be decoded at all.
func loadFile(dir, name string, kustomized bool) (objects []Object, errs []error, incomplete bool) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, []error{err}, true
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			incomplete = true
			break
		}
		if isEmptyDocument(raw) {
			doc--
			continue
		}
		where := name
		if doc > 1 {
			where = fmt.Sprintf("%s (document %d)", name, doc)
		}
		value, gvk, err := strictDecoder.Decode(raw, nil, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			// After a strict-mode error (unknown or duplicate field) the object is still
			// decoded, so the rules can check it too; after any other error it is not.
			if !runtime.IsStrictDecodingError(err) || value == nil {
				incomplete = true
				continue
			}
		}
		meta, ok := value.(interface{ GetName() string })
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s has no metadata", where, gvk.Kind))
			incomplete = true
			continue
		}
		objects = append(objects, Object{
			File: name, Doc: doc, Kind: gvk.Kind, Name: meta.GetName(), Value: value, Kustomized: kustomized,
		})
	}
	if len(objects) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: holds no manifest", name))
	}
	return objects, errs, incomplete
}

// isEmptyDocument is true for a document of only comments and blank lines (e.g. after a
// leading `---`).
func isEmptyDocument(raw []byte) bool {
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && line != "---" {
			return false
		}
	}
	return true
}
