package match_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

func TestDefaultConfigIsValid(t *testing.T) {
	if err := match.DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	// The zero Config means the defaults for every setting whose zero is
	// meaningless; it is valid too.
	if err := (match.Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
}

func TestConfigValidateNamesEveryBadField(t *testing.T) {
	cfg := match.DefaultConfig()
	cfg.Mode = "fast"
	cfg.Fusion.Rule = "avg"
	cfg.Fusion.ConvexWeight = 1.5
	cfg.Fusion.AdaptiveWeight = -0.5
	cfg.Fields.Body.Analyzer = "klingon"
	cfg.Fields.Name.Weight = -1
	cfg.Abstain.Threshold = 2
	cfg.TopK = 99
	cfg.Abstain.Classifiers = []match.Classifier{{Mode: skill.ModeHybrid, Features: []string{"nope"},
		Mean: []float64{0}, Scale: []float64{1}, Weights: []float64{1}}}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, field := range []string{"mode", "fusion.rule", "fusion.convex_weight", "fusion.adaptive_weight", "fields.body.analyzer",
		"fields.name.weight", "abstain.threshold", "top_k", "abstain.classifiers[0]"} {
		if !strings.Contains(err.Error(), field+":") {
			t.Errorf("error does not name %s:\n%v", field, err)
		}
	}
}

// TestOneClassifierPerModeAndModel: hybrid classifiers of different models
// live side by side (the bundled models each bring one); two for the same
// mode and model are refused.
func TestOneClassifierPerModeAndModel(t *testing.T) {
	cl := func(model string) match.Classifier {
		return match.Classifier{Mode: skill.ModeHybrid, Model: model, Features: []string{match.FeatDenseTop},
			Mean: []float64{0}, Scale: []float64{1}, Weights: []float64{1}}
	}
	cfg := match.DefaultConfig()
	cfg.Abstain.Classifiers = []match.Classifier{cl("model-a"), cl("model-b")}
	if err := cfg.Validate(); err != nil {
		t.Errorf("classifiers of two models refused: %v", err)
	}
	cfg.Abstain.Classifiers = []match.Classifier{cl("model-a"), cl("model-a")}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "abstain.classifiers[1]") {
		t.Errorf("two classifiers of one model: %v, want abstain.classifiers[1] refused", err)
	}
}

// TestConfigRoundTrips checks that the config file can carry every field,
// in JSON and YAML.
func TestConfigRoundTrips(t *testing.T) {
	cfg := match.DefaultConfig()
	cfg.Abstain.Classifiers = []match.Classifier{{Mode: skill.ModeKeyword, Features: match.KeywordFeatures,
		Mean: make([]float64, 3), Scale: []float64{1, 1, 1}, Weights: []float64{1, 2, 3}, Bias: 0.5, Cutoff: 0.4, Confident: 0.7}}
	cfg.CalibratedOn = "sha256:0123456789abcdef sha256:fedcba9876543210"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := cfg
	bad.Abstain.Classifiers = []match.Classifier{cfg.Abstain.Classifiers[0]}
	bad.Abstain.Classifiers[0].Confident = 1.5
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "abstain.classifiers[0]") {
		t.Errorf("confident 1.5: %v, want an error naming the classifier", err)
	}
	j, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON match.Config
	if err := json.Unmarshal(j, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, cfg) {
		t.Errorf("JSON round trip:\ngot  %+v\nwant %+v", fromJSON, cfg)
	}
	y, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var fromYAML match.Config
	if err := yaml.Unmarshal(y, &fromYAML); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromYAML, cfg) {
		t.Errorf("YAML round trip:\ngot  %+v\nwant %+v\n%s", fromYAML, cfg, y)
	}
	// A partial file over the defaults changes only what it names.
	partial := match.DefaultConfig()
	if err := yaml.Unmarshal([]byte("fusion:\n  rule: rrf\nabstain:\n  threshold: 0.42\n"), &partial); err != nil {
		t.Fatal(err)
	}
	if partial.Fusion.Rule != skill.FusionRRF || partial.Abstain.Threshold != 0.42 || partial.Fusion.ConvexWeight != match.DefaultConfig().Fusion.ConvexWeight {
		t.Errorf("partial YAML over defaults: %+v", partial.Fusion)
	}
}
