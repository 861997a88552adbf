package s3io

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// TestVersionIDsAreDigested: a member's version ID changes its split's ID, and a member
// without one digests as it always did, so plans of current objects keep their IDs.
func TestVersionIDsAreDigested(t *testing.T) {
	m := Member{Key: "k", Size: 10, ETag: `"e"`}
	plain := splitID("b", []Member{m})
	// The digest of an unversioned member, as computed before versions were planned.
	if plain != "ebb9b987cd3b69cf133324e055b12227" {
		t.Errorf("unversioned ID %s", plain)
	}
	v1, v2 := m, m
	v1.VersionID, v2.VersionID = "v1", "v2"
	a, b := splitID("b", []Member{v1}), splitID("b", []Member{v2})
	if a == plain || b == plain || a == b {
		t.Fatalf("IDs: unversioned %s, v1 %s, v2 %s", plain, a, b)
	}
	// An ETag cannot pass for an ETag and a version ID.
	forged := m
	forged.ETag = m.ETag + "\x02v1"
	if splitID("b", []Member{forged}) == a {
		t.Fatal("a forged ETag digests like a versioned member")
	}
}

func TestVersionsConfig(t *testing.T) {
	future := Config{Bucket: "bkt", Versions: Versions{AsOf: time.Now().Add(time.Hour)}}
	if err := future.Validate(); err == nil || !strings.Contains(err.Error(), "Config.Versions.AsOf") {
		t.Errorf("AsOf in the future: %v", err)
	}
	dir := Config{Bucket: "name--usw2-az1--x-s3", Endpoint: "http://127.0.0.1:1", Versions: Versions{Pinned: true}}
	_, err := PlanDescriptors(context.Background(), dir, func(SplitDescriptor) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "directory bucket") {
		t.Errorf("a directory bucket with Versions: %v", err)
	}
}

// TestReadContinuouslyRefusesVersions: a watch reads what each refresh lists, so a plan of
// versions has no meaning there; the refusal names the field at construction.
func TestReadContinuouslyRefusesVersions(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Config.Versions") {
			t.Fatalf("ReadContinuously with Versions: %v", r)
		}
	}()
	_, s := beam.NewPipelineWithRoot()
	ReadContinuously(s, Config{Bucket: "bkt", Versions: Versions{Pinned: true}}, time.Minute, time.Time{})
}
