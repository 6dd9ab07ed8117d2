package match_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// hostileTasks are tasks a client might send by mistake or on purpose.
func hostileTasks() []string {
	var unique strings.Builder
	for i := 0; unique.Len() < match.DefaultMaxTaskBytes-16; i++ {
		unique.WriteString("w")
		unique.WriteString(strings.Repeat("x", i%7))
		unique.WriteString(string(rune('a' + i%26)))
		unique.WriteString(string(rune('a' + (i/26)%26)))
		unique.WriteString(" ")
	}
	return []string{
		strings.Repeat("pdf ", 1<<18),                           // 1 MiB
		unique.String(),                                         // thousands of distinct words at the byte cap
		strings.Repeat("fill pdf form ", 1100),                  // the same phrase over and over
		strings.Repeat("a", match.DefaultMaxTaskBytes),          // one 16 KiB word
		strings.Repeat("AbCdEfGh", match.DefaultMaxTaskBytes/8), // camelCase humps everywhere
		"\x00\x01\x02 fill\tpdf\r\nform \x1b[31m",               // control characters
		"\xff\xfe\xfd",                                          // invalid UTF-8
		"📄🖊️ ✍️ ملء نموذج PDF 填写表格",                             // emoji and other scripts
		strings.Repeat("-_-", 5000),                             // separators only
		"\u202e mrof fdp llif",                                  // bidi override
	}
}

func TestHostileTasks(t *testing.T) {
	skills := catalog()
	ix := build(t, skills, match.DefaultConfig(), vectors(len(skills)), constEmbedder(onehot(len(skills), 0)))
	for i, task := range hostileTasks() {
		for _, mode := range []skill.MatchMode{skill.ModeHybrid, skill.ModeKeyword} {
			start := time.Now()
			res, err := ix.Match(context.Background(), skill.MatchRequest{Task: task, TopK: match.DefaultMaxTopK, Options: skill.MatchOptions{Mode: mode}}, nil)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("task %d (%d bytes) took %s", i, len(task), d)
			}
			checkResult(t, task, match.DefaultMaxTopK, res, err)
		}
	}
}

// checkResult checks what any request must get: a valid result or an
// InvalidArgument error.
func checkResult(t *testing.T, task string, topK int, res skill.MatchResult, err error) {
	t.Helper()
	if err != nil {
		var e *skill.Error
		if !errors.As(err, &e) || e.Code != skill.CodeInvalidArgument || e.Field == "" {
			t.Fatalf("task %.40q: error %v is not an InvalidArgument with a field", task, err)
		}
		return
	}
	if !utf8.ValidString(task) || len(task) > match.DefaultMaxTaskBytes {
		t.Fatalf("task %.40q was accepted", task)
	}
	if res.Abstained != (len(res.Candidates) == 0) || (res.Abstained && res.AbstainReason == "") {
		t.Fatalf("task %.40q: inconsistent result %+v", task, res)
	}
	want := topK
	if want == 0 {
		want = match.DefaultTopK
	}
	if len(res.Candidates) > want {
		t.Fatalf("task %.40q: %d candidates for top_k %d", task, len(res.Candidates), topK)
	}
	for _, c := range res.Candidates {
		if c.Skill == nil || c.Reason == "" {
			t.Fatalf("task %.40q: candidate without skill or reason: %+v", task, c)
		}
	}
}

// FuzzMatch throws arbitrary tasks, top_k values and modes at Match: it
// must answer every one with a result or an InvalidArgument, quickly.
func FuzzMatch(f *testing.F) {
	for _, task := range hostileTasks() {
		if len(task) < 1<<12 {
			f.Add(task, 3, uint8(0))
		}
	}
	f.Add("fill pdf form", 0, uint8(1))
	f.Add("", -1, uint8(2))
	f.Add("deploy helm upgrade", 1_000_000_000, uint8(3))
	f.Add("slow sql", 50, uint8(4))
	skills := catalog()
	ix := build(f, skills, match.DefaultConfig(), vectors(len(skills)), fakeEmbedder{
		embed: func(_ context.Context, text string) ([]float32, error) {
			if len(text)%5 == 0 {
				return nil, errModelDown // degraded now and then
			}
			return onehot(len(skills), len(text)%len(skills)), nil
		},
	})
	modes := []skill.MatchMode{"", skill.ModeHybrid, skill.ModeDense, skill.ModeKeyword, "bogus"}
	fusions := []skill.Fusion{"", skill.FusionTiebreak, skill.FusionRRF, skill.FusionConvex, skill.FusionAdaptive}
	f.Fuzz(func(t *testing.T, task string, topK int, sel uint8) {
		req := skill.MatchRequest{Task: task, TopK: topK, Options: skill.MatchOptions{Mode: modes[int(sel)%len(modes)], Fusion: fusions[int(sel/8)%len(fusions)], IncludeHidden: sel&0x80 != 0}}
		start := time.Now()
		res, err := ix.Match(context.Background(), req, nil)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %s", d)
		}
		if err != nil && req.Options.Mode == "bogus" {
			return
		}
		if err == nil && (topK < 0 || topK > match.DefaultMaxTopK) {
			t.Fatalf("top_k %d accepted", topK)
		}
		checkResult(t, task, topK, res, err)
	})
}

// FuzzReadSnapshot feeds damaged snapshots to ReadSnapshot: it must return
// an error or an index, never panic. Each input is read as it is, and again
// with its checksum made to match, so that the damage reaches the decoder.
func FuzzReadSnapshot(f *testing.F) {
	ix, err := match.Build(context.Background(), match.BuildInput{
		Skills: []*skill.Skill{newSkill("pdf-forms", "Fill PDF forms", withTriggers("fill pdf form")), newSkill("sql-review", "Review SQL")},
		Config: match.DefaultConfig(),
	})
	if err != nil {
		f.Fatal(err)
	}
	var b strings.Builder
	if err := ix.WriteSnapshot(&b); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(b.String()))
	f.Add([]byte("MCPSAGIX"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = match.ReadSnapshot(data)
		if len(data) >= 4 {
			fixed := bytes.Clone(data)
			body := fixed[:len(fixed)-4]
			binary.LittleEndian.PutUint32(fixed[len(body):], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
			_, _ = match.ReadSnapshot(fixed)
		}
	})
}
