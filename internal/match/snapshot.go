package match

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"

	"github.com/mcpsag/router/internal/statedir"
)

// Snapshots let a restart skip analysis: WriteSnapshot saves what Build
// computed (postings, lengths, phrases, vectors as given), ReadSnapshot
// restores it, and Update of the restored index with the current skills
// reuses every skill whose indexed text did not change. A snapshot names no
// host path beyond each skill's folder, which Update matches skills by.
//
// Layout: the magic, then sections of little-endian integers, length-
// prefixed strings and raw arrays, in the order WriteSnapshot writes them,
// then the CRC-32C of all that. Each array starts at an offset that is a
// multiple of its value's size, and the vector rows at a multiple of 64
// (zero bytes pad up to it), so that ReadSnapshot can use the arrays where
// they lie instead of copying them, and the pre-scan's 64-byte loads of the
// int8 rows do not straddle cache lines. The magic is statedir.IndexMagic
// and the version statedir.IndexVersion, which changes with the layout or
// with anything that changes analysis (analyzers, normalisation); another
// version is not read.
const snapshotMagic = statedir.IndexMagic

// ErrSnapshotVersion is returned by ReadSnapshot for a snapshot of another
// version or analysis.
var ErrSnapshotVersion = errors.New("match snapshot of another version")

// snapshotHeader is the JSON header of a snapshot.
type snapshotHeader struct {
	Version int    `json:"version"`
	Config  Config `json:"config"`
	Model   string `json:"model"`
	Slots   int    `json:"slots"`
	Live    int    `json:"live"`
	Dim     int    `json:"dim"`
	// Params is set when the parameters field is indexed.
	Params bool `json:"params,omitempty"`
}

// WriteSnapshot writes what the index computed to w: the magic, the
// header, the sections (slots, sparse, phrases, dense) and the checksum.
func (ix *Index) WriteSnapshot(w io.Writer) error {
	crc := crc32.New(crcTable)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<20)
	e := &enc{w: bw}
	e.bytes([]byte(snapshotMagic))
	hj, err := json.Marshal(ix.snapshotHeader())
	if err != nil {
		return err
	}
	e.str(string(hj))
	e.slots(ix)
	if err := e.sparse(ix.sparse); err != nil {
		return err
	}
	e.phrases(ix.phrases, len(ix.docs))
	if ix.dense != nil {
		e.dense(ix.dense)
	}
	if e.err != nil {
		return e.err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err = w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// snapshotHeader is the header of ix's snapshot.
func (ix *Index) snapshotHeader() snapshotHeader {
	h := snapshotHeader{Version: statedir.IndexVersion, Config: ix.cfg, Model: ix.model, Slots: len(ix.docs), Live: len(ix.byOrd),
		Params: ix.sparse.hasField(fieldParams)}
	if ix.dense != nil {
		h.Dim = ix.dense.dim
	}
	return h
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ReadSnapshot restores an index from data, which WriteSnapshot wrote. Its
// skills are stand-ins that carry only what Update compares: use the result
// only as the base of Update, which attaches the current skills (and
// embedder, generation and configuration). It returns ErrSnapshotVersion
// for a snapshot of another version, and an error for a damaged one.
//
// The index uses the vectors and postings where they lie in data when data
// is aligned like them (a file mapped into memory is), and its strings (the
// terms, the stand-ins' texts) wherever they lie, instead of copying them:
// data must stay unchanged as long as the index, or any index updated from
// it, is in use. Update copies what it changes; nothing writes to data.
func ReadSnapshot(data []byte) (*Index, error) {
	d, h, err := readSnapshotHeader(data)
	if err != nil {
		return nil, err
	}
	cfg := h.Config.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("match snapshot config: %w", err)
	}
	if h.Slots < 0 || h.Slots > 1<<24 || h.Live > h.Slots {
		return nil, fmt.Errorf("match snapshot: %d slots, %d live", h.Slots, h.Live)
	}
	ix := &Index{cfg: cfg, model: h.Model}
	if err := d.docs(ix, h.Slots); err != nil {
		return nil, err
	}
	if err := d.order(ix, h.Live); err != nil {
		return nil, err
	}
	if ix.sparse, err = d.sparse(cfg, h); err != nil {
		return nil, err
	}
	if ix.phrases, err = d.phrases(h.Slots, h.Live); err != nil {
		return nil, err
	}
	if h.Dim > 0 {
		ix.dense = d.dense(h.Dim, ix.docs)
	}
	if d.err == nil && d.off != len(d.b) {
		d.err = fmt.Errorf("%d bytes after the last section", len(d.b)-d.off)
	}
	if d.err != nil {
		return nil, fmt.Errorf("match snapshot: %w", d.err)
	}
	return ix, nil
}

// readSnapshotHeader checks data's checksum and magic and reads its header
// and version; the decoder it returns reads what follows.
func readSnapshotHeader(data []byte) (*dec, snapshotHeader, error) {
	var h snapshotHeader
	if len(data) < len(snapshotMagic)+4 {
		return nil, h, errors.New("match snapshot: too short (damaged or cut)")
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(data[len(body):]) {
		return nil, h, errors.New("match snapshot: checksum mismatch (damaged or cut)")
	}
	d := &dec{b: body}
	if m := d.take(len(snapshotMagic)); d.err != nil || string(m) != snapshotMagic {
		return nil, h, fmt.Errorf("match snapshot: bad magic: %w", errors.Join(d.err, errors.New("not a snapshot")))
	}
	if err := json.Unmarshal([]byte(d.str()), &h); err != nil || d.err != nil {
		return nil, h, fmt.Errorf("match snapshot header: %w", errors.Join(d.err, err))
	}
	if h.Version != statedir.IndexVersion {
		got, want := strconv.Itoa(h.Version), strconv.Itoa(statedir.IndexVersion)
		return nil, h, fmt.Errorf("%w: %s, written by %s; this router reads %s", ErrSnapshotVersion, got, statedir.WrittenBy(got, want), want)
	}
	return d, h, nil
}
