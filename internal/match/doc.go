// Package match ranks skills for a task and decides when none fits.
//
// An Index is built once per catalog generation from the catalog's winning
// skills, their document vectors and their bodies (Build), or updated from
// the previous generation's Index, reusing the analysis of every skill
// whose indexed text did not change (Update, asking skill.SameSearch);
// either way it is immutable
// afterwards: the loader builds the next Index off to the side and the
// router swaps it in atomically, so any number of Match calls may run on an
// Index concurrently. WriteSnapshot and ReadSnapshot keep an Index across
// restarts, each skill as what its searched text is made of
// (skill.SearchSource).
//
// Match combines two retrieval signals:
//
//   - dense: exact cosine similarity between the task's embedding and every
//     skill vector, held as unit rows in blocks (an int8 pre-scan, with
//     exact rescoring of the rows that can reach the top, on CPUs that
//     have it);
//   - sparse: BM25F over the index's own postings of the skill's name,
//     description, tags, triggers, (configurably) the start of its body,
//     and a tool's parameters, each field with its own weight, analyzed
//     with bleve's analyzers. The text of each field is the skill's own
//     (skill.Skill.MatchName, SearchDescription and the rest).
//
// A fusion rule (tiebreak, rrf, convex, or adaptive: convex with a dense
// share that grows with the share of the task's terms the keyword index
// lacks) merges the two rankings; trigger phrases and explicit mentions of
// a skill's name add a bounded boost; then the abstention rules (a
// per-model threshold, or a calibrated classifier over score features,
// which internal/eval fits) decide whether any skill fits, and the
// relative and margin rules decide how many candidates to return. Every
// candidate carries its scores, ranks and fired triggers so the decision
// can be explained.
//
// Query embeddings come through the small QueryEmbedder interface; when it
// fails, Match answers from BM25 alone and marks the result Degraded.
package match
