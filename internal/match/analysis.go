package match

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	unitok "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
)

// Bleve analyzer names, one per Analyzer.
var bleveAnalyzers = map[Analyzer]string{
	AnalyzerStem:  "mcpsag_stem",
	AnalyzerLight: "mcpsag_light",
	AnalyzerPlain: "mcpsag_plain",
}

// newMapping returns an index mapping with BM25 scoring, the three analyzers
// and one text field per indexed field. Fields are indexed with frequencies
// only: nothing is stored, no term vectors, no doc values.
func newMapping(fields []*sparseField) (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	im.ScoringModel = "bm25"
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	base := []any{lowercase.Name, en.PossessiveName, en.StopName}
	chains := map[Analyzer][]any{
		AnalyzerStem:  append(append([]any{}, base...), en.SnowballStemmerName),
		AnalyzerLight: append(append([]any{}, base...), en.PluralStemmerName),
		AnalyzerPlain: base,
	}
	for a, name := range bleveAnalyzers {
		err := im.AddCustomAnalyzer(name, map[string]any{
			"type":          custom.Name,
			"tokenizer":     unitok.Name,
			"token_filters": chains[a],
		})
		if err != nil {
			return nil, fmt.Errorf("analyzer %s: %w", a, err)
		}
	}
	dm := bleve.NewDocumentStaticMapping()
	for _, f := range fields {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer = bleveAnalyzers[f.analyzer]
		fm.Store = false
		fm.IncludeInAll = false
		fm.IncludeTermVectors = false
		fm.DocValues = false
		dm.AddFieldMappingsAt(f.name, fm)
	}
	im.DefaultMapping = dm
	im.DefaultAnalyzer = bleveAnalyzers[AnalyzerPlain]
	if err := im.Validate(); err != nil {
		return nil, fmt.Errorf("index mapping: %w", err)
	}
	return im, nil
}

// analyzers returns the bleve analyzer for each Analyzer.
func analyzers(im *mapping.IndexMappingImpl) (map[Analyzer]analysis.Analyzer, error) {
	out := make(map[Analyzer]analysis.Analyzer, len(bleveAnalyzers))
	for a, name := range bleveAnalyzers {
		an := im.AnalyzerNamed(name)
		if an == nil {
			return nil, fmt.Errorf("analyzer %s is not registered", name)
		}
		out[a] = an
	}
	return out, nil
}

// numAnalyzers is the number of Analyzer values; analyzerIndex numbers
// them.
const numAnalyzers = 3

func analyzerIndex(a Analyzer) int {
	switch a {
	case AnalyzerStem:
		return 0
	case AnalyzerLight:
		return 1
	default:
		return 2
	}
}

// textAnalysis runs the three analyzers on one text with one pass of their
// shared chain (tokenizer, lowercase, possessive, stop words): each
// analyzer's stemmer then runs on a copy of the shared tokens. The terms are
// exactly those of running each analyzer on its own.
type textAnalysis struct {
	full  [numAnalyzers]analysis.Analyzer
	base  analysis.Analyzer
	extra [numAnalyzers][]analysis.TokenFilter
	split bool // base and extra are usable
}

// sharedFilters is the length of the chain the analyzers share.
const sharedFilters = 3

func newTextAnalysis(ans map[Analyzer]analysis.Analyzer) *textAnalysis {
	ta := &textAnalysis{split: true}
	for _, a := range []Analyzer{AnalyzerStem, AnalyzerLight, AnalyzerPlain} {
		ta.full[analyzerIndex(a)] = ans[a]
	}
	var tok analysis.Tokenizer
	for i, an := range ta.full {
		d, ok := an.(*analysis.DefaultAnalyzer)
		if !ok || len(d.CharFilters) > 0 || len(d.TokenFilters) < sharedFilters || (tok != nil && d.Tokenizer != tok) {
			ta.split = false
			return ta
		}
		tok = d.Tokenizer
		if ta.base == nil {
			ta.base = &analysis.DefaultAnalyzer{Tokenizer: d.Tokenizer, TokenFilters: d.TokenFilters[:sharedFilters]}
		}
		ta.extra[i] = d.TokenFilters[sharedFilters:]
	}
	return ta
}

// shared returns the tokens of the shared chain, or nil when the analyzers
// do not share one.
func (ta *textAnalysis) shared(text string) analysis.TokenStream {
	if !ta.split {
		return nil
	}
	return ta.base.Analyze([]byte(text))
}

// finish applies analyzer a's own filters to a copy of shared tokens.
func (ta *textAnalysis) finish(a int, shared analysis.TokenStream) analysis.TokenStream {
	if len(ta.extra[a]) == 0 {
		return shared
	}
	cp := make([]analysis.Token, len(shared))
	out := make(analysis.TokenStream, len(shared))
	for i, t := range shared {
		cp[i] = *t
		out[i] = &cp[i]
	}
	for _, f := range ta.extra[a] {
		out = f.Filter(out)
	}
	return out
}

// analyze returns the tokens analyzer a makes of text.
func (ta *textAnalysis) analyze(a int, text string) analysis.TokenStream {
	if !ta.split {
		return ta.full[a].Analyze([]byte(text))
	}
	return ta.finish(a, ta.base.Analyze([]byte(text)))
}

// terms analyzes text that normalizeText has prepared and returns its terms
// in order.
func terms(an analysis.Analyzer, text string) []string {
	if text == "" {
		return nil
	}
	ts := an.Analyze([]byte(text))
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t.Term)
	}
	return out
}

// normalizeText prepares text for analysis: camelCase humps, hyphens and
// underscores become word breaks (skill names such as "pdf-forms",
// "fill_form" and "fillForm" then share the words of "fill form"), and
// control characters and invalid UTF-8 become spaces.
func normalizeText(s string) string {
	out := make([]rune, 0, len(s)+8)
	var prev, prevPrev rune
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				r = ' '
			}
		}
		switch {
		case r == '_' || r == '-' || unicode.IsControl(r):
			r = ' '
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			out = append(out, ' ') // fooBar, v2Beta
		case unicode.IsLower(r) && unicode.IsUpper(prev) && unicode.IsUpper(prevPrev):
			// PDFForm: the break goes before the last capital.
			out = append(out, prev)
			out[len(out)-2] = ' '
		}
		out = append(out, r)
		prevPrev, prev = prev, r
	}
	return string(out)
}
