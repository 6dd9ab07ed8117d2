// Package eval measures matching quality. It builds a generation of a folder
// of skills in-process through loader.Loader, exactly as the router does (on
// a temporary store, with the real embedding model), runs labelled queries
// through the same Index.Rank code path as the Match RPC, and reports
// ranking quality (Hit@1, Recall@3, Recall@5, MRR@10, NDCG@10 over queries
// that need a skill), abstention precision and recall over all queries, and
// latency. Calibrate fits the convex and adaptive weights, the single-score
// threshold and the abstention classifier on a labelled set, with
// cross-validated figures; FitTasks fits the shipped calibration's
// classifier on many sets at once. The classifiers are fitted here (a
// logistic model under sign constraints) and evaluated by match.Classifier.
// routerctl eval and routerctl calibrate are thin
// wrappers around Open, Evaluate and Calibrate.
package eval
