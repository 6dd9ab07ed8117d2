package skillfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillmd"
)

// maxRegistryBytes caps a registry.json.
const maxRegistryBytes = 4 << 20

// Registry is a root's governance file, registry.json at the top of the root:
//
//	{
//	  "skills": {
//	    "pdf-forms": {"owner": "docs-team", "tags": ["pdf"], "enabled": true},
//	    "legacy-export": {"enabled": false}
//	  }
//	}
//
// Every field is optional. enabled: false removes the skill from listings and
// matches; GetSkill still shows it and says why.
type Registry struct {
	Skills map[string]registryJSON `json:"skills"`
}

type registryJSON struct {
	Owner   string   `json:"owner"`
	Tags    []string `json:"tags"`
	Enabled *bool    `json:"enabled"`
}

// ReadRegistry reads root/registry.json, keyed by folded skill name. A missing
// file is an empty registry (ok is true); a broken one yields an error problem
// and ok false, and the caller keeps the last good registry for that root, so a
// bad edit never re-enables a disabled skill.
func ReadRegistry(root string) (entries map[string]skill.RegistryEntry, ok bool, problems []skill.Problem) {
	p := filepath.Join(root, RegistryFile)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, true, nil
	}
	problem := func(line int, format string, args ...any) []skill.Problem {
		return []skill.Problem{{Severity: skill.SeverityError, Code: "registry-invalid", File: p, Line: line,
			Message: fmt.Sprintf(format, args...)}}
	}
	if err != nil {
		return nil, false, problem(0, "cannot read registry: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRegistryBytes+1))
	if err != nil {
		return nil, false, problem(0, "cannot read registry: %v", err)
	}
	if len(data) > maxRegistryBytes {
		return nil, false, problem(0, "registry is over %d bytes", maxRegistryBytes)
	}
	var reg Registry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&reg); err != nil {
		line := 0
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line = 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		}
		return nil, false, problem(line, "registry is not valid (want {\"skills\": {\"name\": {\"owner\", \"tags\", \"enabled\"}}}): %v", err)
	}
	out := make(map[string]skill.RegistryEntry, len(reg.Skills))
	for name, e := range reg.Skills {
		out[skillmd.FoldName(name)] = skill.RegistryEntry{Owner: e.Owner, Tags: e.Tags, Enabled: e.Enabled, Source: p}
	}
	return out, true, nil
}
