package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/faultproxy"
)

// scripted serves every GET of one 100-byte object as answer says, so that a test can send
// exactly the status and headers a misbehaving server sends.
func scripted(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *Gets {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(answer))
	t.Cleanup(srv.Close)
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("k", "s", ""),
	})
	return NewGets(client, "bkt", Settings{ReadTimeout: time.Minute, MaxAttempts: 2, PartBytes: 1 << 20, MaxRequestsInFlight: 1})
}

var (
	scriptedData = []byte(strings.Repeat("0123456789", 10))
	scriptedObj  = Object{Key: "k", ETag: `"planned"`, Size: 100}
)

// reply writes status, headers (name, value pairs) and body.
func reply(w http.ResponseWriter, status int, body []byte, headers ...string) {
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// Each way an answer can differ from its request is refused before its body is used, as
// another version (overwritten) or as the server's fault, with a message naming the object,
// the planned and the received values.
func TestAnswerRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pos, end int64
		answer   func(w http.ResponseWriter, r *http.Request)
		want     error
		mention  []string
	}{
		{"ETag of another version", 0, 100, func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, scriptedData, "ETag", `"other"`)
		}, ErrOtherVersion, []string{"s3://bkt/k", `"other"`, `"planned"`}},
		{"no ETag", 0, 100, func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, scriptedData)
		}, ErrBadAnswer, []string{"s3://bkt/k", "no ETag", `"planned"`}},
		{"ETag of another version, ranged", 10, 20, func(w http.ResponseWriter, r *http.Request) {
			reply(w, 206, scriptedData[10:20], "ETag", `"other"`, "Content-Range", "bytes 10-19/100")
		}, ErrOtherVersion, []string{"s3://bkt/k", "bytes=10-19", `"other"`, `"planned"`}},
		{"Content-Range of another object size", 10, 20, func(w http.ResponseWriter, r *http.Request) {
			reply(w, 206, scriptedData[10:20], "ETag", `"planned"`, "Content-Range", "bytes 10-19/101")
		}, ErrOtherVersion, []string{"s3://bkt/k", "bytes 10-19/101", "101 bytes, planned 100"}},
		{"Content-Range of another range", 10, 20, func(w http.ResponseWriter, r *http.Request) {
			reply(w, 206, scriptedData[0:10], "ETag", `"planned"`, "Content-Range", "bytes 0-9/100")
		}, ErrBadAnswer, []string{"s3://bkt/k", "bytes=10-19", "bytes 0-9/100"}},
		{"206 without Content-Range", 10, 20, func(w http.ResponseWriter, r *http.Request) {
			reply(w, 206, scriptedData[10:20], "ETag", `"planned"`)
		}, ErrBadAnswer, []string{"s3://bkt/k", "206"}},
		{"206 of the whole object for a range", 10, 20, func(w http.ResponseWriter, r *http.Request) {
			reply(w, 206, scriptedData, "ETag", `"planned"`, "Content-Range", "bytes 0-99/100")
		}, ErrBadAnswer, []string{"bytes 0-99/100"}},
		{"whole object of another size", 0, 100, func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, scriptedData[:99], "ETag", `"planned"`)
		}, ErrOtherVersion, []string{"s3://bkt/k", "99 bytes, planned 100"}},
		{"whole object of another size for a range", 10, 20, func(w http.ResponseWriter, r *http.Request) {
			reply(w, 200, append(scriptedData, 'x'), "ETag", `"planned"`)
		}, ErrOtherVersion, []string{"101 bytes, planned 100"}},
		{"status 203", 0, 100, func(w http.ResponseWriter, r *http.Request) {
			reply(w, 203, scriptedData, "ETag", `"planned"`)
		}, ErrBadAnswer, []string{"status 203"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := scripted(t, tc.answer).Open(context.Background(), scriptedObj, tc.pos, tc.end)
			got, err := io.ReadAll(r)
			r.Close()
			if !errors.Is(err, tc.want) || len(got) > 0 {
				t.Fatalf("read %q, %v; want no byte and %v", got, err, tc.want)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error does not mention %s: %v", m, err)
				}
			}
			if r.gets != 1 {
				t.Errorf("%d GETs; a refused answer is not asked again", r.gets)
			}
		})
	}
}

// What the checks rely on from the SDK: a 206's status (from the raw response in the
// output's metadata), Content-Range, Content-Length and ETag; a 200 to a range is used from
// the requested offset to the requested end; listed ETags without quotes match quoted ones.
func TestAnswerAccepted(t *testing.T) {
	var whole atomic.Bool
	gets := scripted(t, func(w http.ResponseWriter, r *http.Request) {
		var first, last int64
		if whole.Load() || r.Header.Get("Range") == "" {
			reply(w, 200, scriptedData, "ETag", `"planned"`)
			return
		}
		fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last)
		reply(w, 206, scriptedData[first:last+1], "ETag", `"planned"`, "Content-Range", fmt.Sprintf("bytes %d-%d/100", first, last))
	})
	for _, w := range []bool{false, true} {
		whole.Store(w)
		for _, rng := range [][2]int64{{0, 100}, {0, 1}, {10, 20}, {99, 100}, {0, 99}} {
			unquoted := scriptedObj
			unquoted.ETag = "planned"
			for _, o := range []Object{scriptedObj, unquoted} {
				r := gets.Open(context.Background(), o, rng[0], rng[1])
				got, err := io.ReadAll(r)
				r.Close()
				if err != nil || !bytes.Equal(got, scriptedData[rng[0]:rng[1]]) {
					t.Errorf("whole=%v %v ETag %s: read %q, %v; want %q", w, rng, o.ETag, got, err, scriptedData[rng[0]:rng[1]])
				}
				wantIgnored := 0
				if w && rng != [2]int64{0, 100} {
					wantIgnored = 1
				}
				if r.rangeIgnored != wantIgnored || r.gets != 1 {
					t.Errorf("whole=%v %v: %d GETs, %d answered whole; want 1 and %d", w, rng, r.gets, r.rangeIgnored, wantIgnored)
				}
			}
		}
	}
}

// Behind a server that ignores Range, every read is exact: probes, reads from an offset,
// parts (their bytes before the range are read and dropped), and bodies resumed after a
// break, whose whole-object answer is read from the byte where the body broke.
func TestRangeIgnored(t *testing.T) {
	const part = 64 << 10
	sizes := []int{0, 1, 3, part, 5*part + 17}
	fx := newFixture(t, part, 1<<20, 3, sizes)
	fx.srv.IgnoreRange(true)
	ctx := context.Background()
	for i, o := range fx.objects {
		head, err := readPrefix(fx.gets, ctx, o, 4)
		if want := fx.data[i][:min(4, len(fx.data[i]))]; err != nil || !bytes.Equal(head, want) {
			t.Errorf("%s: ReadPrefix = % x, %v; want % x", o.Key, head, err, want)
		}
		for _, from := range []int64{0, o.Size / 3, o.Size - 1} {
			if from < 0 {
				continue
			}
			r := fx.gets.Open(ctx, o, from, o.Size)
			got, err := io.ReadAll(r)
			r.Close()
			if err != nil || !bytes.Equal(got, fx.data[i][from:]) {
				t.Errorf("%s from %d: read %d bytes, %v; want %d", o.Key, from, len(got), err, o.Size-from)
			}
		}
	}
	big, data := fx.objects[4], fx.data[4]
	var peak atomic.Int64
	f, _ := fx.newFetcher(&peak)
	s := f.Add(fx.gets, big, Range{PlanEnd: big.Size}).Stream()
	got, err := io.ReadAll(s)
	s.Close()
	f.Close()
	st := f.Stats()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetched in parts: %d bytes, %v; want the object's %d", len(got), err, big.Size)
	}
	// Parts 64K (ramp: min(256K, part)), then 64K each: 6 parts, all but the first one
	// answered with the whole object, each received up to its own end.
	var wantReceived int64
	for end := int64(part); ; end += part {
		wantReceived += min(end, big.Size)
		if end >= big.Size {
			break
		}
	}
	if st.Gets != 6 || st.RangeIgnored != 6 || st.Received != wantReceived {
		t.Errorf("stats %+v; want 6 GETs, 6 answered whole, %d bytes received", st, wantReceived)
	}

	// A body that breaks 1000 bytes into the range: the resume, answered whole, is read
	// from the byte where the break was.
	from := int64(2*part + 5)
	fx.srv.SetFault(big.Key, "", 1, faultproxy.Fault{ResetAfter: from + 1000})
	r := fx.gets.Open(ctx, big, from, big.Size)
	got, err = io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data[from:]) || r.resumes != 1 || r.rangeIgnored != 2 {
		t.Errorf("resumed read: %d bytes, %v, %d resumes, %d answered whole; want %d bytes, 1 resume, 2 whole", len(got), err, r.resumes, r.rangeIgnored, big.Size-from)
	}
	reqs := fx.srv.Requests(big.Key)
	if last := reqs[len(reqs)-1].Range; last != fmt.Sprintf("bytes=%d-%d", from+1000, big.Size-1) {
		t.Errorf("the resume asked for %q, want the bytes from %d", last, from+1000)
	}
}

// Behind a server that ignores If-Match, an object overwritten since planning with content
// of the same size is refused by its ETag on every path, before any byte is returned.
func TestIfMatchIgnored(t *testing.T) {
	const part = 64 << 10
	fx := newFixture(t, part, 1<<20, 2, []int{3 * part})
	fx.srv.IgnoreIfMatch(true)
	o := fx.objects[0]
	fx.srv.Put(t, "fetch", o.Key, bytes.Repeat([]byte("n"), int(o.Size)))
	ctx := context.Background()
	if head, err := readPrefix(fx.gets, ctx, o, 4); !errors.Is(err, ErrOtherVersion) || len(head) > 0 {
		t.Errorf("ReadPrefix: % x, %v; want ErrOtherVersion", head, err)
	}
	r := fx.gets.Open(ctx, o, 100, o.Size)
	if got, err := io.ReadAll(r); !errors.Is(err, ErrOtherVersion) || len(got) > 0 {
		t.Errorf("read from byte 100: %d bytes, %v; want ErrOtherVersion", len(got), err)
	}
	r.Close()
	var peak atomic.Int64
	f, _ := fx.newFetcher(&peak)
	s := f.Add(fx.gets, o, Range{PlanEnd: o.Size}).Stream()
	got, err := io.ReadAll(s)
	s.Close()
	f.Close()
	if !errors.Is(err, ErrOtherVersion) || len(got) > 0 || !strings.Contains(err.Error(), o.ETag) {
		t.Errorf("parts: %d bytes, %v; want ErrOtherVersion naming the planned ETag", len(got), err)
	}
	// Overwritten shorter: a range past the new end is answered 416, not with an ETag.
	fx.srv.Put(t, "fetch", o.Key, []byte("short"))
	r = fx.gets.Open(ctx, o, part, 2*part)
	if got, err := io.ReadAll(r); !errors.Is(err, ErrOtherVersion) || len(got) > 0 || !strings.Contains(err.Error(), "416") {
		t.Errorf("read past the new end: %d bytes, %v; want ErrOtherVersion from a 416", len(got), err)
	}
	r.Close()
}
