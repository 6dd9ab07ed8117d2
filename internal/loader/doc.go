// Package loader builds the skill catalog from the folders on disk: it walks
// the configured roots, parses and validates each SKILL.md (lenient, as the
// Agent Skills client guide asks), applies precedence between roots, agent
// scoping and the registry.json governance files, keeps parsed records in the
// store so unchanged files are never parsed twice, watches the roots for
// changes, and serves the staged loads: summary, body under a token budget,
// and single resource files confined to the skill's folder.
package loader
