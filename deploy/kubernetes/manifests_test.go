// Checks of the Kubernetes manifests without a cluster: the kustomize base
// and its overlays are built in-process (the kustomize library kubectl
// embeds), every object is decoded strictly into the Kubernetes API types
// (unknown or duplicate fields are errors), and the result is held to the
// rules docs/deployment.md states. Two tests then start a real router on the
// file layouts the pods would see (a ConfigMap volume as the kubelet writes
// it, a git-sync checkout) and query it as the probes and clients would.
package kubernetes_test

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/mcpsag/router/internal/config"
)

// The kustomizations checked: the base and every overlay.
var kustomizations = []string{"base", "overlays/git-sync"}

// Source manifests of the base, decoded one by one before kustomize sees them.
var baseFiles = []string{"base/deployment.yaml", "base/service.yaml", "base/service-headless.yaml", "base/pdb.yaml"}

// routerContainer is the router's container name in the Deployment.
const routerContainer = "router"

// decoder decodes YAML strictly into the API types the manifests use.
func decoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// objects is a built kustomization, by kind.
type objects struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	configMaps  []*corev1.ConfigMap
	pdbs        []*policyv1.PodDisruptionBudget
}

func (o objects) configMap(name string) *corev1.ConfigMap {
	for _, cm := range o.configMaps {
		if cm.Name == name {
			return cm
		}
	}
	return nil
}

// build runs kustomize on dir and decodes every resulting object strictly.
func build(t *testing.T, dir string) objects {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	dec := decoder(t)
	var o objects
	for _, r := range res.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := dec.Decode(y, nil, nil)
		if err != nil {
			t.Fatalf("%s: %s/%s does not decode strictly: %v", dir, r.GetKind(), r.GetName(), err)
		}
		switch v := obj.(type) {
		case *appsv1.Deployment:
			o.deployments = append(o.deployments, v)
		case *corev1.Service:
			o.services = append(o.services, v)
		case *corev1.ConfigMap:
			o.configMaps = append(o.configMaps, v)
		case *policyv1.PodDisruptionBudget:
			o.pdbs = append(o.pdbs, v)
		default:
			t.Errorf("%s: unexpected %T", dir, obj)
		}
	}
	if len(o.deployments) != 1 {
		t.Fatalf("%s: %d Deployments, want 1", dir, len(o.deployments))
	}
	return o
}

func TestSourceManifestsDecodeStrictly(t *testing.T) {
	dec := decoder(t)
	for _, f := range baseFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := dec.Decode(data, nil, nil); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestKustomizations(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			o := build(t, dir)
			d := o.deployments[0]
			pod := d.Spec.Template
			podLabels := labels.Set(pod.Labels)
			sel := selector(t, d.Spec.Selector)
			if sel.Empty() || !sel.Matches(podLabels) {
				t.Errorf("the Deployment's selector %v does not select its pods %v", sel, podLabels)
			}
			if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
				t.Errorf("replicas %v: want at least 2", d.Spec.Replicas)
			}
			if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
				t.Errorf("rolling update %+v: want maxUnavailable 0, so a rollout never lowers capacity", ru)
			}

			checkPodSecurity(t, pod.Spec)
			for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
				checkContainer(t, pod.Spec, c)
			}
			router := container(t, pod.Spec, routerContainer)
			grpcPort := port(t, router, "grpc")
			metricsPort := port(t, router, "metrics")
			env := envOf(router)

			t.Run("ports", func(t *testing.T) {
				if p := addrPort(t, env["MCPSAG_ADDR"]); p != grpcPort {
					t.Errorf("MCPSAG_ADDR %q, but the grpc port is %d", env["MCPSAG_ADDR"], grpcPort)
				}
				if p := addrPort(t, env["MCPSAG_ADMIN_ADDR"]); p != metricsPort {
					t.Errorf("MCPSAG_ADMIN_ADDR %q, but the metrics port is %d", env["MCPSAG_ADMIN_ADDR"], metricsPort)
				}
				a := pod.Annotations
				if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != strconv.Itoa(int(metricsPort)) || a["prometheus.io/path"] != "/metrics" {
					t.Errorf("Prometheus annotations %v do not name the metrics port %d and /metrics", a, metricsPort)
				}
			})

			t.Run("probes", func(t *testing.T) {
				for name, p := range map[string]*corev1.Probe{"startup": router.StartupProbe, "readiness": router.ReadinessProbe} {
					if p == nil || p.GRPC == nil {
						t.Errorf("%s probe %+v: want a gRPC health probe", name, p)
						continue
					}
					if p.GRPC.Port != grpcPort {
						t.Errorf("%s probe checks port %d, the router serves on %d", name, p.GRPC.Port, grpcPort)
					}
				}
				// Liveness must hold while the router drains (gRPC health is
				// NOT_SERVING then): the admin listener's /healthz.
				if p := router.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.IntValue() != int(metricsPort) {
					t.Errorf("liveness probe %+v: want GET /healthz on the admin port %d", p, metricsPort)
				}
				if p := router.ReadinessProbe; p != nil && p.GRPC != nil && p.GRPC.Service == nil {
					t.Error("the readiness probe checks no service: name the router's API, which turns NOT_SERVING while draining")
				}
			})

			t.Run("shutdown fits the grace period", func(t *testing.T) {
				cfg := routerConfig(t, o, d)
				need := cfg.Shutdown.Drain + cfg.Shutdown.Grace
				grace := pod.Spec.TerminationGracePeriodSeconds
				if cfg.Shutdown.Drain == 0 || grace == nil || float64(*grace) <= need.Seconds() {
					t.Errorf("terminationGracePeriodSeconds %v must exceed drain %s + grace %s (and drain should be set)", grace, cfg.Shutdown.Drain, cfg.Shutdown.Grace)
				}
			})

			t.Run("volumes", func(t *testing.T) { checkVolumes(t, o, pod.Spec, router) })

			t.Run("services", func(t *testing.T) {
				var headless, normal int
				for _, s := range o.services {
					if s.Spec.ClusterIP == corev1.ClusterIPNone {
						headless++
						if s.Spec.PublishNotReadyAddresses {
							t.Errorf("%s publishes replicas that are not ready", s.Name)
						}
					} else {
						normal++
					}
					if !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) || len(s.Spec.Selector) == 0 {
						t.Errorf("Service %s selects %v, not the router's pods %v", s.Name, s.Spec.Selector, podLabels)
					}
					for _, sp := range s.Spec.Ports {
						if target := resolvePort(router, sp.TargetPort); target == 0 {
							t.Errorf("Service %s port %s targets %v, which the router does not expose", s.Name, sp.Name, sp.TargetPort.String())
						}
					}
					if !slices.ContainsFunc(s.Spec.Ports, func(sp corev1.ServicePort) bool { return resolvePort(router, sp.TargetPort) == grpcPort }) {
						t.Errorf("Service %s does not carry the gRPC port", s.Name)
					}
				}
				if headless != 1 || normal != 1 {
					t.Errorf("%d headless and %d normal Services, want one of each", headless, normal)
				}
			})

			t.Run("disruption budget", func(t *testing.T) {
				if len(o.pdbs) != 1 {
					t.Fatalf("%d PodDisruptionBudgets, want 1", len(o.pdbs))
				}
				pdb := o.pdbs[0]
				if s := selector(t, pdb.Spec.Selector); s.Empty() || !s.Matches(podLabels) {
					t.Errorf("the PodDisruptionBudget selects %v, not the router's pods %v", s, podLabels)
				}
				replicas := int(*d.Spec.Replicas)
				var allowed int
				switch {
				case pdb.Spec.MaxUnavailable != nil:
					allowed = pdb.Spec.MaxUnavailable.IntValue()
				case pdb.Spec.MinAvailable != nil:
					allowed = replicas - pdb.Spec.MinAvailable.IntValue()
				}
				if allowed < 1 || allowed >= replicas {
					t.Errorf("the budget allows %d of %d replicas down: want at least 1 (drains can proceed) and fewer than all", allowed, replicas)
				}
			})
		})
	}
}

// TestGitSyncOverlay checks that the git-sync containers and the router agree
// on where the checkout is.
func TestGitSyncOverlay(t *testing.T) {
	o := build(t, "overlays/git-sync")
	spec := o.deployments[0].Spec.Template.Spec
	router := container(t, spec, routerContainer)
	ws := envOf(router)["MCPSAG_WORKSPACE"]
	var sidecar bool
	for _, c := range spec.InitContainers {
		env := envOf(c)
		root, link := env["GITSYNC_ROOT"], env["GITSYNC_LINK"]
		if root == "" || link == "" {
			t.Errorf("%s: GITSYNC_ROOT %q, GITSYNC_LINK %q", c.Name, root, link)
			continue
		}
		if filepath.Join(root, link) != ws {
			t.Errorf("%s checks out to %s/%s, the router's workspace is %s", c.Name, root, link, ws)
		}
		vol := mountAt(c, root)
		if vol == nil || vol.ReadOnly {
			t.Errorf("%s does not mount a writable volume at %s", c.Name, root)
		} else if rm := mountAt(router, root); rm == nil || rm.Name != vol.Name || !rm.ReadOnly {
			t.Errorf("the router does not mount %s read-only at %s (%+v)", vol.Name, root, rm)
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecar = true
		} else if !slices.Contains(c.Args, "--one-time") {
			t.Errorf("init container %s neither exits (--one-time) nor is a sidecar", c.Name)
		}
	}
	if !sidecar {
		t.Error("no git-sync sidecar keeps the checkout current")
	}
}

func selector(t *testing.T, ls *metav1.LabelSelector) labels.Selector {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func container(t *testing.T, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

func port(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port %q", c.Name, name)
	return 0
}

// resolvePort returns the container port a Service's targetPort names, 0 if
// none.
func resolvePort(c corev1.Container, target intstr.IntOrString) int32 {
	for _, p := range c.Ports {
		if (target.Type == intstr.String && p.Name == target.StrVal) || (target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
			return p.ContainerPort
		}
	}
	return 0
}

func addrPort(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("address %q: %v", addr, err)
		return -1
	}
	n, _ := strconv.Atoi(p)
	return int32(n)
}

func envOf(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

func mountAt(c corev1.Container, path string) *corev1.VolumeMount {
	for i, m := range c.VolumeMounts {
		if m.MountPath == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func checkPodSecurity(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	sc := spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", sc)
	}
	if sc != nil && (sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault) {
		t.Errorf("pod seccomp profile %+v, want RuntimeDefault", sc.SeccompProfile)
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("the pod shares a host namespace")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token it does not use")
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
	}
}

func checkContainer(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	img := c.Image
	if at := strings.LastIndex(img, "/"); at >= 0 {
		img = img[at+1:]
	}
	if _, tag, ok := strings.Cut(img, ":"); (!ok || tag == "latest" || tag == "") && !strings.Contains(c.Image, "@sha256:") {
		t.Errorf("%s: image %q has no version tag or digest", c.Name, c.Image)
	}
	r := c.Resources
	if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
		t.Errorf("%s: resources %+v: want CPU and memory requests and a memory limit", c.Name, r)
	}
	if r.Limits.Memory().Cmp(*r.Requests.Memory()) < 0 {
		t.Errorf("%s: memory limit below the request", c.Name)
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("%s: no securityContext", c.Name)
	default:
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: root file system is writable", c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: privilege escalation allowed", c.Name)
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("%s: privileged", c.Name)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s: capabilities %+v: want drop ALL, add none", c.Name, sc.Capabilities)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			t.Errorf("%s: runs as root", c.Name)
		}
		nonRoot := sc.RunAsNonRoot
		if nonRoot == nil && pod.SecurityContext != nil {
			nonRoot = pod.SecurityContext.RunAsNonRoot
		}
		if nonRoot == nil || !*nonRoot {
			t.Errorf("%s: runAsNonRoot is not set", c.Name)
		}
	}
	for _, m := range c.VolumeMounts {
		if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
			t.Errorf("%s mounts volume %q, which the pod does not have", c.Name, m.Name)
		}
	}
}

// checkVolumes holds the router's mounts to the rules: the state directory is
// a writable emptyDir, skills and config are read-only, and every ConfigMap is
// used and has the keys its volume maps.
func checkVolumes(t *testing.T, o objects, spec corev1.PodSpec, router corev1.Container) {
	t.Helper()
	env := envOf(router)
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	state := mountAt(router, env["MCPSAG_STATE_DIR"])
	if state == nil || state.ReadOnly || vols[state.Name].EmptyDir == nil {
		t.Errorf("the state directory %q is not a writable emptyDir mount (%+v)", env["MCPSAG_STATE_DIR"], state)
	}
	if state != nil && vols[state.Name].EmptyDir != nil && vols[state.Name].EmptyDir.SizeLimit == nil {
		t.Error("the state emptyDir has no sizeLimit")
	}
	for _, m := range router.VolumeMounts {
		if m.Name != state.Name && !m.ReadOnly {
			t.Errorf("the router mounts %s writable at %s: only the state directory should be", m.Name, m.MountPath)
		}
		if m.MountPath == env["MCPSAG_WORKSPACE"] || strings.HasPrefix(env["MCPSAG_WORKSPACE"], m.MountPath+"/") || strings.HasPrefix(m.MountPath, env["MCPSAG_WORKSPACE"]+"/") {
			if !m.ReadOnly {
				t.Errorf("skills at %s are mounted writable", m.MountPath)
			}
		}
	}
	if cfgPath := env["MCPSAG_CONFIG"]; cfgPath != "" && mountAt(router, filepath.Dir(cfgPath)) == nil {
		t.Errorf("MCPSAG_CONFIG %s is not in a mounted folder", cfgPath)
	}
	used := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		used[v.ConfigMap.Name] = true
		cm := o.configMap(v.ConfigMap.Name)
		if cm == nil {
			t.Errorf("volume %s uses ConfigMap %s, which the build does not make", v.Name, v.ConfigMap.Name)
			continue
		}
		mapped := map[string]bool{}
		for _, it := range v.ConfigMap.Items {
			mapped[it.Key] = true
			if _, ok := cm.Data[it.Key]; !ok {
				t.Errorf("volume %s maps key %s, which ConfigMap %s lacks", v.Name, it.Key, cm.Name)
			}
			if !filepath.IsLocal(it.Path) {
				t.Errorf("volume %s maps %s to %q", v.Name, it.Key, it.Path)
			}
		}
		if len(v.ConfigMap.Items) > 0 {
			for k := range cm.Data {
				if !mapped[k] {
					t.Errorf("ConfigMap %s key %s is not mapped into volume %s: the file would be missing", cm.Name, k, v.Name)
				}
			}
		}
	}
	for _, cm := range o.configMaps {
		if !used[cm.Name] {
			t.Errorf("ConfigMap %s is not used by the Deployment", cm.Name)
		}
	}
}

// routerConfig resolves the router's configuration from the ConfigMap that
// MCPSAG_CONFIG points into, with the real config loader (unknown keys are
// errors there too).
func routerConfig(t *testing.T, o objects, d *appsv1.Deployment) config.Config {
	t.Helper()
	spec := d.Spec.Template.Spec
	router := container(t, spec, routerContainer)
	env := envOf(router)
	cfgPath := env["MCPSAG_CONFIG"]
	m := mountAt(router, filepath.Dir(cfgPath))
	if m == nil {
		t.Fatalf("MCPSAG_CONFIG %q is not in a mounted folder", cfgPath)
	}
	var cm *corev1.ConfigMap
	for _, v := range spec.Volumes {
		if v.Name == m.Name && v.ConfigMap != nil {
			cm = o.configMap(v.ConfigMap.Name)
		}
	}
	if cm == nil {
		t.Fatalf("%s is not a ConfigMap volume", m.Name)
	}
	data, ok := cm.Data[filepath.Base(cfgPath)]
	if !ok {
		t.Fatalf("ConfigMap %s has no %s", cm.Name, filepath.Base(cfgPath))
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	env["MCPSAG_CONFIG"] = file
	cfg, err := config.Resolve(config.Overrides{}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("the router's config from ConfigMap %s: %v", cm.Name, err)
	}
	return cfg
}
