// Package match ranks skills for a task and decides when none fits.
//
// An Index is built once per catalog generation from the catalog's winning
// skills, their document vectors and their bodies (Build), and is immutable
// afterwards: the daemon builds the next Index off to the side and swaps it in
// atomically, so any number of Match calls may run on an Index concurrently.
//
// Match combines two retrieval signals:
//
//   - dense: exact cosine similarity between the task's embedding and every
//     skill vector, held in one in-memory matrix;
//   - sparse: Okapi BM25 over a bleve index of the skill's name, description,
//     tags, triggers and (configurably) the start of its body, each field with
//     its own weight and analyzer.
//
// A fusion rule (tiebreak, rrf, convex, or adaptive: convex with a dense
// share that grows with the share of the task's terms the keyword index
// lacks) merges the two rankings; trigger
// phrases and explicit mentions of a skill's name add a bounded boost; then
// the abstention rules (a per-model threshold, or a calibrated classifier over
// score features) decide whether any skill fits, and the relative and margin
// rules decide how many candidates to return. Every candidate carries its
// scores, ranks and fired triggers so the decision can be explained.
//
// Query embeddings come through the small QueryEmbedder interface; when it
// fails, Match answers from BM25 alone and marks the result Degraded.
// Package eval runs whole evaluations over a generation built like the
// router's, and its Calibrate fits the abstention classifier, the threshold
// and the fusion weights on labelled queries.
package match
