package kubernetes_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// writeConfigMapVolume lays out a ConfigMap volume in dir the way the kubelet
// does: the files in a timestamped hidden folder, a "..data" link to it, and
// one link per top-level entry through "..data". The router sees the skills
// through those links.
func writeConfigMapVolume(t *testing.T, dir string, cm *corev1.ConfigMap, items []corev1.KeyToPath) {
	t.Helper()
	if len(items) == 0 {
		for k := range cm.Data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	const stamp = "..2026_01_02_03_04_05.000000001"
	tops := map[string]bool{}
	for _, it := range items {
		p := filepath.Join(dir, stamp, it.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(cm.Data[it.Key]), 0o644); err != nil {
			t.Fatal(err)
		}
		tops[strings.Split(filepath.ToSlash(it.Path), "/")[0]] = true
	}
	if err := os.Symlink(stamp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for top := range tops {
		if err := os.Symlink(filepath.Join("..data", top), filepath.Join(dir, top)); err != nil {
			t.Fatal(err)
		}
	}
}

func listNames(t *testing.T, r *daemontest.Router) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := r.Client.ListSkills(ctx, &routerv1.ListSkillsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range res.Skills {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names
}

// TestConfigMapSkillsServed starts a router on the base's ConfigMaps laid
// out as the kubelet mounts them, and asks it what the probes and a client
// would.
func TestConfigMapSkillsServed(t *testing.T) {
	o := build(t, "base")
	spec := o.deployments[0].Spec.Template.Spec
	router := container(t, spec, routerContainer)
	env := envOf(router)
	podWS := env["MCPSAG_WORKSPACE"]

	ws := t.TempDir()
	var want []string
	for _, v := range spec.Volumes {
		m := mountFor(router, v.Name)
		if v.ConfigMap == nil || m == nil {
			continue
		}
		cm := o.configMap(v.ConfigMap.Name)
		switch {
		case m.MountPath == filepath.Dir(env["MCPSAG_CONFIG"]):
			// The config file, where the router finds it by default.
			dir := filepath.Join(ws, filepath.Dir(config.DefaultFile))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			data := cm.Data[filepath.Base(env["MCPSAG_CONFIG"])]
			if err := os.WriteFile(filepath.Join(ws, config.DefaultFile), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(m.MountPath, podWS+"/"):
			dir := filepath.Join(ws, strings.TrimPrefix(m.MountPath, podWS+"/"))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeConfigMapVolume(t, dir, cm, v.ConfigMap.Items)
			for _, it := range v.ConfigMap.Items {
				if filepath.Base(it.Path) == "SKILL.md" {
					want = append(want, filepath.Base(filepath.Dir(it.Path)))
				}
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("the base mounts no skills from a ConfigMap")
	}
	slices.Sort(want)

	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) { c.AdminAddr = "127.0.0.1:0" }})
	if got := listNames(t, r); !slices.Equal(got, want) {
		t.Errorf("served %v, want the ConfigMap's skills %v", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := r.Client.Status(ctx, &routerv1.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if v := st.Validation; st.FilesInvalid != 0 || v.GetErrors() != 0 || v.GetWarnings() != 0 {
		t.Errorf("the example skills have problems: %d invalid files, validation %v", st.FilesInvalid, v)
	}
	if st.Config.GetError() != "" {
		t.Errorf("config: %s", st.Config.GetError())
	}

	// What the probes ask, answered by the real health service.
	hc := healthpb.NewHealthClient(r.Conn)
	if p := router.LivenessProbe.HTTPGet; p != nil {
		res, err := http.Get("http://" + r.Main.AdminAddr() + p.Path)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Errorf("liveness probe GET %s: %v %v", p.Path, err, res)
		}
		if res != nil {
			res.Body.Close()
		}
	}
	for name, p := range map[string]*corev1.Probe{"startup": router.StartupProbe, "readiness": router.ReadinessProbe} {
		var service string
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		res, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil || res.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("%s probe (service %q): %v, %v", name, service, res.GetStatus(), err)
		}
	}
}

func mountFor(c corev1.Container, volume string) *corev1.VolumeMount {
	for i, m := range c.VolumeMounts {
		if m.Name == volume {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// TestGitSyncLayoutServed runs a router on the layout git-sync keeps (the
// workspace is a link to the current worktree) and moves the link as
// git-sync does after a pull: the router serves the new commit's skills
// without a restart.
func TestGitSyncLayoutServed(t *testing.T) {
	root := t.TempDir()
	worktree := func(hash, skill string) string {
		rel := filepath.Join(".worktrees", hash)
		p := filepath.Join(root, rel, "skills", skill, "SKILL.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		doc := "---\nname: " + skill + "\ndescription: An example skill in commit " + hash + " of a skills repository.\n---\n\nBody.\n"
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return rel
	}
	link := filepath.Join(root, "workspace")
	if err := os.Symlink(worktree("a1", "first-commit-skill"), link); err != nil {
		t.Fatal(err)
	}
	r := daemontest.Start(t, link, daemontest.Options{StateDir: t.TempDir()})
	if got := listNames(t, r); !slices.Equal(got, []string{"first-commit-skill"}) {
		t.Fatalf("served %v at the first commit", got)
	}

	// git-sync's swap: a new worktree, the link replaced atomically, the old
	// worktree removed.
	next := worktree("b2", "second-commit-skill")
	tmp := filepath.Join(root, ".workspace-next")
	if err := os.Symlink(next, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, ".worktrees", "a1")); err != nil {
		t.Fatal(err)
	}
	moved := time.Now()
	deadline := moved.Add(20 * time.Second)
	for {
		got := listNames(t, r)
		if slices.Equal(got, []string{"second-commit-skill"}) {
			t.Logf("served the new commit %s after the link moved", time.Since(moved).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still serving %v 20s after the link moved", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
