// Command recipe builds MCPSAG's default offline embedding model,
// models/mcpsag-static-v1, from openly licensed text that Debian packages
// ship, and measures it.
//
// The model is a static token-embedding table (one row per WordPiece token,
// with an idf-like weight baked into each row's length) exported as a
// standard ONNX graph plus tokenizer.json, so the router runs it through the
// same hugot path as any sentence-transformer. See models/README.md for the
// steps and models/mcpsag-static-v1/MODEL.md for the data and figures.
//
// Usage:
//
//	go run ./models/recipe build  [-work DIR] [-out DIR]   # data, vocab, train, export
//	go run ./models/recipe data   [-work DIR] [-sources LIST] # extract training pairs
//	go run ./models/recipe vocab  [-work DIR]              # WordPiece vocabulary -> tokenizer.json
//	go run ./models/recipe train  [-work DIR]              # word vectors + contrastive training
//	go run ./models/recipe export [-work DIR] [-out DIR]   # model.onnx, tokenizer.json, mcpsag-model.json
//	go run ./models/recipe validate [-work DIR] [-model DIR] # held-out Debian retrieval through hugot
//	go run ./models/recipe eval [-model DIR] [-w 0.4] SET_DIR...  # BM25, dense, hybrid on eval sets
//	go run ./models/recipe calibrate [-eval DIR] [-eval-transfer DIR] [-corpora DIR]   # verdict classifier -> calibration.yaml
//	go run ./models/recipe encoder -src DIR -out DIR        # BERT safetensors -> model folder with the int8 encoder graph
//	go run ./models/recipe distill -encoder DIR -out DIR    # encoder model folder -> static model distilled from it
//
// Every step is deterministic: the same inputs give the same model.onnx bytes.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

const (
	defaultWork  = "/tmp/mcpsag-model"
	defaultModel = "models/mcpsag-static-v1"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	start := time.Now()
	switch cmd {
	case "build":
		err = runBuild(args)
	case "data":
		err = runData(args)
	case "vocab":
		err = runVocab(args)
	case "train":
		err = runTrain(args)
	case "export":
		err = runExport(args)
	case "validate":
		err = runValidate(args)
	case "eval":
		err = runEval(args)
	case "calibrate":
		err = runCalibrate(args)
	case "encoder":
		err = runEncoder(args)
	case "distill":
		err = runDistill(args)
	case "-h", "-help", "--help", "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "recipe: unknown command %q\n", cmd)
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "recipe %s: %v\n", cmd, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "recipe %s: done in %s\n", cmd, time.Since(start).Round(time.Millisecond))
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: go run ./models/recipe COMMAND [flags]

commands:
  build     run data, vocab, train and export in order
  data      extract training pairs (Debian, AppStream, WordNet, FOLDOC; -sources adds
            man pages, Go and Python doc comments)
  vocab     build the WordPiece vocabulary and tokenizer.json
  train     train the token table (PMI-SVD vectors, then contrastive)
  export    write model.onnx, tokenizer.json and mcpsag-model.json
  validate  held-out Debian retrieval through hugot (BM25, dense, hybrid)
  eval      BM25, dense and hybrid on an eval set (skills/ + queries.jsonl)
  calibrate fit the verdict classifier on the five dev sets and foreign tasks
  encoder   convert a BERT encoder (model.safetensors, config.json, tokenizer.json)
            into a model folder with the int8 encoder graph
  distill   make a static model from an encoder model folder (token rows, PCA, Zipf weights)

Run a command with -h for its flags.
`)
}

func runBuild(args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	work := fs.String("work", defaultWork, "work directory for intermediate files")
	out := fs.String("out", defaultModel, "model folder to write")
	sources := fs.String("sources", defaultSources, "comma-separated data sources: "+strings.Join(allSources, ","))
	fs.Parse(args)
	steps := []struct {
		name string
		fn   func([]string) error
		args []string
	}{
		{"data", runData, []string{"-work", *work, "-sources", *sources}},
		{"vocab", runVocab, []string{"-work", *work}},
		{"train", runTrain, []string{"-work", *work}},
		{"export", runExport, []string{"-work", *work, "-out", *out}},
	}
	for _, s := range steps {
		t := time.Now()
		if err := s.fn(s.args); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintf(os.Stderr, "build: %s done in %s\n", s.name, time.Since(t).Round(time.Millisecond))
	}
	return nil
}

func runData(args []string) error {
	fs := flag.NewFlagSet("data", flag.ExitOnError)
	work := fs.String("work", defaultWork, "work directory")
	sources := fs.String("sources", defaultSources, "comma-separated sources: "+strings.Join(allSources, ","))
	fs.Parse(args)
	if err := os.MkdirAll(*work, 0o755); err != nil {
		return err
	}
	pairs, inputs, err := collectData(*sources)
	if err != nil {
		return err
	}
	removeCaches(*work)
	counts := map[string]int{}
	for _, p := range pairs {
		counts[p.Source]++
	}
	fmt.Fprintf(os.Stderr, "data: %d pairs %v\n", len(pairs), counts)
	if err := writeJSON(workPath(*work, "inputs.json"), inputs); err != nil {
		return err
	}
	return writeJSON(workPath(*work, "pairs.json"), pairs)
}

func workPath(work, name string) string { return work + "/" + name }
