// Package statedir says what the state folder holds: the name of every file
// in it, and the format of each file with the magic or version that marks
// it (the parser's version among them, which the cache's records carry),
// each with one line per version of what it changed. Everything in the folder
// is derived from the skill folders and the embedding model, so a file of
// another format is never migrated: it is moved aside or ignored, and made
// again.
//
//	<state dir>/
//	    cache.db                        CacheFile: the bbolt cache of records, bodies and vectors (its buckets: internal/store)
//	    cache.db.clean                  CleanNote: the file as the last clean Close left it (stamp, CRC-32C), and each model's vector count
//	    cache.db.<reason>-<unix time>   a cache moved aside, unusable ("corrupt") or of another schema ("incompatible"); only the newest is kept
//	    router.holder                   HolderFile: who holds the folder's lock, to name it in errors
//	    router.sock                     SocketFile: the holder's Unix socket, serving the router's gRPC API to other sessions
//	    index.snapshot                  SnapshotFile: the last generation's match index
//	    scan.last                       ScanFile: the scan behind index.snapshot
//	    scan.listings                   ListingsFile: the folder listings of the last full scan
//	    models/                         ModelsDir: the bundled model, unpacked
//	    .<name>-<random>.tmp            a write of <name> that did not finish (TempPattern); removed at the next start
//
// The stores that write them: internal/store (the cache, its note and
// holder), internal/loader (the snapshot, the scan and the listings, with
// encodings from internal/match and internal/skillfs), internal/daemon (the
// model, the socket).
package statedir

// File names in the state folder.
const (
	CacheFile    = "cache.db"
	CleanNote    = CacheFile + ".clean"
	HolderFile   = "router.holder"
	SocketFile   = "router.sock"
	SnapshotFile = "index.snapshot"
	ScanFile     = "scan.last"
	ListingsFile = "scan.listings"
	ModelsDir    = "models"
)

// Folders the router makes in the system's temporary folder, named by
// these prefixes and a random suffix: a cache for a state folder that
// cannot hold one, and the private state folder of a standalone MCP session
// that indexes on its own. Those a killed process left are removed by the
// next that makes one.
const (
	TempCachePrefix    = "mcpsag-cache-"
	PrivateStatePrefix = "mcpsag-mcp-"
)

// TempPattern names the temporary files a write of the file name leaves
// beside it until it renames them over it (an os.CreateTemp pattern).
func TempPattern(name string) string { return "." + name + "-*.tmp" }

// Leftovers lists the files whose temporary files a start removes: those
// written by a temporary file and a rename, and "index", the snapshot's
// name in earlier releases.
var Leftovers = []string{SnapshotFile, ListingsFile, ScanFile, "index"}

// cache.db: the bbolt file, its meta bucket holding CacheSchema,
// "<RecordFormat>.<ParserVersion>" and the release that
// last opened it, which a router of another release names. A file of another
// schema is moved aside and made again; records of another record format
// or parser version are dropped (every skill is parsed again, vectors are
// kept); a value of another seal format is treated as absent.
const (
	// CacheSchema is the bucket layout.
	//   1: meta, files, bodies, vectors (one bucket per model).
	CacheSchema = 1
	// SealFormat is the first byte of every value in the files, bodies
	// and vectors buckets.
	//   1: the format byte, a CRC-32C of the key and the payload, the payload.
	SealFormat = 1
	// RecordFormat is the encoding of a file record.
	//   1: JSON.
	//   2: JSON, sealed.
	//   3: a compact binary encoding, sealed.
	RecordFormat = 3
	// ParserVersion identifies what internal/skillmd's Parse returns
	// (skillmd.Version is this constant). Bump it with any change to
	// Parse's results or to skill.Frontmatter, so that no record of the
	// old results is served.
	//   1: the Agent Skills spec fields, lenient YAML, the host extensions.
	//   2: a name holding a control, format or bidirectional character is an error (name-control), not served.
	//   3: a frontmatter is measured with its aliases expanded (frontmatter-too-large, yaml-too-complex).
	ParserVersion = 3
)

// index.snapshot: SnapshotMagic, the length of a JSON header (the model's
// identity, the body characters embedded, the generation's content id),
// the header padded so that what follows starts at a multiple of 64 bytes,
// then the match index's own snapshot, which starts with IndexMagic and
// IndexVersion. Either of another value is not read: the start analyzes
// every skill.
const (
	// SnapshotMagic marks the file.
	//   MCPSAGGS: the header, the index, and the scan behind it.
	//   MCPSAGG2: no scan (a start scans; later the scan went to scan.last); the header padded to 64 bytes.
	SnapshotMagic = "MCPSAGG2"
	// IndexMagic marks the match index's snapshot.
	IndexMagic = "MCPSAGIX"
	// IndexVersion changes with the index snapshot's layout or with
	// anything that changes analysis (analyzers, normalisation) or the
	// text a vector embeds.
	//   1: postings, lengths, phrases and vectors as given, a CRC-32C.
	//   2, 4: not released.
	//   3: the int8 rows of the pre-scan.
	//   5: no per-list maxTF and minLen statistics.
	//   6: the vectors as the index's unit rows.
	//   7: arrays aligned to their value's size, used in place from a mapping.
	//   8: vector rows on 64-byte boundaries.
	//   9: a skill's vector embeds its when_to_use after the description.
	IndexVersion = 9
)

// scan.last and scan.listings: skillfs's encodings, each a magic, the
// body, and a CRC-32C. One of another magic is ignored: the start scans,
// or the scan reads every folder.
const (
	// ScanMagic marks a scan result (skillfs.MarshalScanResult).
	//   MCPSAGS1: the roots, the files with their resources, the folders, the problems, with totals.
	ScanMagic = "MCPSAGS1"
	// ListingsMagic marks folder listings (skillfs.Listings).
	//   MCPSAGL1: each folder's stamp and entries.
	//   MCPSAGL2: totals (entries, path and name bytes) first, so that a decode allocates once.
	ListingsMagic = "MCPSAGL2"
)
