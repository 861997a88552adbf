package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/spate-io/beam-s3/internal/faultproxy"
)

// A growing read asks for windows that double, 4 KiB, 8 KiB, ..., up to its largest and the
// range's end; a read closed early counts the bytes it received and those it asked for.
func TestOpenGrowingDoublesItsWindows(t *testing.T) {
	fx := newFixture(t, 100_000, 100_000, 1, []int{100_000})
	o := fx.objects[0]
	r := fx.gets.OpenGrowing(context.Background(), o, 1000, 60_000, 4096, 12288)
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, fx.data[0][1000:60_000]) {
		t.Fatalf("read %d bytes, %v; want bytes [1000, 60000)", len(got), err)
	}
	var ranges []string
	for _, q := range fx.srv.Requests(o.Key) {
		ranges = append(ranges, q.Range)
	}
	want := []string{"bytes=1000-5095", "bytes=5096-13287", "bytes=13288-25575", "bytes=25576-37863", "bytes=37864-50151", "bytes=50152-59999"}
	if fmt.Sprint(ranges) != fmt.Sprint(want) {
		t.Errorf("ranges %v, want %v", ranges, want)
	}
	if g, b := r.Transferred(); g != 6 || b != 59_000 || r.Requested() != 59_000 {
		t.Errorf("Transferred() = %d GETs, %d bytes, Requested() %d; want 6, 59000, 59000", g, b, r.Requested())
	}

	early := fx.gets.OpenGrowing(context.Background(), o, 0, o.Size, 4096, 12288)
	if _, err := io.ReadFull(early, make([]byte, 5000)); err != nil {
		t.Fatal(err)
	}
	early.Close()
	if g, b := early.Transferred(); g != 2 || b != 5000 || early.Requested() != 4096+8192 {
		t.Errorf("closed after 5000 bytes: %d GETs, %d bytes received, %d requested; want 2, 5000, %d", g, b, early.Requested(), 4096+8192)
	}
}

// A body broken mid-way is resumed from its next byte, pinned like the first request.
func TestPinnedReaderResumesBrokenBody(t *testing.T) {
	fx := newFixture(t, 1<<20, 1<<20, 1, []int{10_000})
	o := fx.objects[0]
	fx.srv.SetFault(o.Key, "", 1, faultproxy.Fault{ResetAfter: 3000})
	r := fx.gets.Open(context.Background(), o, 0, o.Size)
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, fx.data[0]) {
		t.Fatalf("read %d bytes, %v; want the object's %d", len(got), err, o.Size)
	}
	reqs := fx.srv.Requests(o.Key)
	if len(reqs) != 2 || reqs[1].Range != fmt.Sprintf("bytes=3000-%d", o.Size-1) || r.resumes != 1 {
		t.Errorf("requests %+v (%d resumes), want the whole object, then a resume from byte 3000", reqs, r.resumes)
	}
	if u := fx.srv.Unpinned(); len(u) > 0 {
		t.Errorf("GETs without If-Match: %v", u)
	}
}

// readPrefix returns the first n bytes of o (fewer if o is shorter), read pinned as the
// planner's magic-byte probe reads them.
func readPrefix(g *Gets, ctx context.Context, o Object, n int64) ([]byte, error) {
	r := g.Open(ctx, o, 0, min(n, o.Size))
	defer r.Close()
	return io.ReadAll(r)
}

// A prefix read reads the first bytes of the planned version, and refuses an object changed
// since with the SDK's 412.
func TestReadPrefix(t *testing.T) {
	fx := newFixture(t, 1<<20, 1<<20, 1, []int{100, 2})
	head, err := readPrefix(fx.gets, context.Background(), fx.objects[0], 4)
	if err != nil || !bytes.Equal(head, fx.data[0][:4]) {
		t.Fatalf("ReadPrefix = % x, %v; want % x", head, err, fx.data[0][:4])
	}
	if reqs := fx.srv.Requests(fx.objects[0].Key); len(reqs) != 1 || reqs[0].Range != "bytes=0-3" {
		t.Errorf("requests %+v, want one GET of bytes 0-3", reqs)
	}
	if head, err := readPrefix(fx.gets, context.Background(), fx.objects[1], 4); err != nil || !bytes.Equal(head, fx.data[1]) {
		t.Errorf("ReadPrefix of a 2-byte object = % x, %v; want its 2 bytes", head, err)
	}
	fx.srv.Put(t, "fetch", fx.objects[0].Key, []byte("new version"))
	_, err = readPrefix(fx.gets, context.Background(), fx.objects[0], 4)
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "PreconditionFailed" {
		t.Errorf("ReadPrefix after an overwrite: %v, want the SDK's PreconditionFailed", err)
	}
}

// The process's count of received bytes, which progress lines read, grows as a body
// arrives, not when its request ends: a part that streams for seconds must not read as
// nothing fetched.
func TestProcessReceivedCountsWhileABodyStreams(t *testing.T) {
	fx := newFixture(t, 1<<20, 1<<20, 1, []int{100_000})
	r := fx.gets.Open(context.Background(), fx.objects[0], 0, 100_000)
	defer r.Close()
	before := ProcessReceived()
	if _, err := io.ReadFull(r, make([]byte, 5000)); err != nil {
		t.Fatal(err)
	}
	if got := ProcessReceived() - before; got < 5000 || got > 100_000 {
		t.Errorf("after 5000 bytes of an open read, the process counts %d bytes received; want at least those 5000 (and at most the body)", got)
	}
}
