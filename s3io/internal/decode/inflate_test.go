package decode

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/spate-io/beam-s3/internal/clitool"
)

// A gzip object read by the checkpointing reader decodes as it is, and every checkpoint it
// kept, encoded and decoded as a resume hint carries it, resumes there: the rest of the
// object, exactly, with the member's CRC and length checked at its end. Objects written by
// gzip (one member), pigz (one member, blocks flushed to byte boundaries), bgzip (64 KiB
// members) and concatenated gzip outputs.
func TestInflateCheckpointsResume(t *testing.T) {
	text, _ := unitLines(30000) // ~5.5 MiB
	plain := []byte(text)
	cat, _ := clitool.RunChunks(t, plain, 2<<20, "gzip", "-c")
	for _, o := range []struct {
		name string
		data []byte
	}{
		{"gzip", clitool.Run(t, plain, "gzip", "-c")},
		{"pigz", clitool.Run(t, plain, "pigz", "-c", "-p", "2")},
		{"bgzip", clitool.Run(t, plain, "bgzip", "-c")},
		{"cat gzip", cat},
	} {
		t.Run(o.name, func(t *testing.T) {
			cps := &Checkpoints{Every: 128 << 10, Keep: 1 << 20}
			s, err := OpenGzip(bytes.NewReader(o.data), cps)
			if err != nil {
				t.Fatal(err)
			}
			all, err := io.ReadAll(s)
			if err != nil || !bytes.Equal(all, plain) {
				t.Fatalf("read %d bytes, want %d: %v", len(all), len(plain), err)
			}
			if want := len(o.data) / (128 << 10) / 2; len(cps.list) < want {
				t.Fatalf("%d checkpoints for %d stored bytes, want at least %d", len(cps.list), len(o.data), want)
			}
			blocks := 0
			for i, cp := range cps.list {
				if !cp.Unit {
					blocks++
				}
				back, err := DecodeCheckpoint(cp.Encode())
				if err != nil {
					t.Fatal(err)
				}
				if i > 0 && cp.Stored-cps.list[i-1].Stored < 128<<10 {
					t.Fatalf("checkpoints %d and %d are %d stored bytes apart, want at least the interval", i-1, i, cp.Stored-cps.list[i-1].Stored)
				}
				r, err := OpenGzipAt(bytes.NewReader(o.data[back.Stored:]), back, &Checkpoints{Every: 128 << 10})
				if err != nil {
					t.Fatalf("checkpoint %+v: %v", cp.Stored, err)
				}
				rest, err := io.ReadAll(r)
				if err != nil || !bytes.Equal(rest, plain[cp.Decoded:]) {
					t.Fatalf("resumed at stored %d (bit %d, decoded %d, member %v): %d bytes, want %d: %v", cp.Stored, cp.Bit, cp.Decoded, cp.Unit, len(rest), len(plain)-int(cp.Decoded), err)
				}
			}
			if o.name != "bgzip" && blocks == 0 {
				t.Fatalf("no checkpoint inside a member among %d", len(cps.list))
			}
			// A corrupt byte after a checkpoint fails the resumed read as corrupt.
			cp := cps.list[len(cps.list)/2]
			bad := bytes.Clone(o.data)
			for i := cp.Stored + 5000; i < cp.Stored+5064 && i < int64(len(bad))-8; i++ {
				bad[i] ^= 0xa5
			}
			r, err := OpenGzipAt(bytes.NewReader(bad[cp.Stored:]), cp, &Checkpoints{Every: 128 << 10})
			if err == nil {
				_, err = io.ReadAll(r)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("corrupt bytes after a checkpoint: %v, want ErrCorrupt", err)
			}
		})
	}
}

// A truncated object, or one whose trailer does not match, fails as corrupt naming the
// member; an empty object is an empty stream.
func TestInflateStreamErrors(t *testing.T) {
	plain := bytes.Repeat([]byte("a line of text\n"), 100000)
	data := clitool.Run(t, plain, "gzip", "-c")
	for name, b := range map[string][]byte{
		"truncated":     data[:len(data)-100],
		"bad checksum":  append(bytes.Clone(data[:len(data)-8]), 1, 2, 3, 4, 5, 6, 7, 8),
		"garbage after": append(bytes.Clone(data), 0x1f, 0x8b, 0, 1),
	} {
		s, err := OpenGzip(bytes.NewReader(b), &Checkpoints{Every: 1 << 20})
		if err == nil {
			_, err = io.ReadAll(s)
		}
		if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte("gzip member at stored offset")) {
			t.Errorf("%s: %v, want ErrCorrupt naming the member", name, err)
		}
	}
	s, err := OpenGzip(bytes.NewReader(nil), &Checkpoints{Every: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(s); err != nil || len(b) != 0 {
		t.Fatalf("empty object: %q, %v", b, err)
	}
}
