package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

func init() {
	register.DoFn2x0[[]byte, func(string)](&recordsNotFrom{})
	register.Function1x1(failureMessage)
}

// recordsNotFrom emits the records that do not name one of Srcs as their source.
type recordsNotFrom struct{ Srcs []string }

func (fn *recordsNotFrom) ProcessElement(rec []byte, emit func(string)) {
	for _, src := range fn.Srcs {
		if bytes.Contains(rec, []byte(`"src":"`+src+`"`)) {
			return
		}
	}
	emit(string(rec))
}

// checksummedRecords returns n NDJSON records of about 1 KiB from src, and their text.
func checksummedRecords(src string, n int) (string, []string) {
	pad := strings.Repeat("x", 1000)
	var b strings.Builder
	recs := make([]string, n)
	for i := range recs {
		recs[i] = fmt.Sprintf(`{"src":%q,"i":%d,"pad":%q}`, src, i, pad)
		b.WriteString(recs[i])
		b.WriteByte('\n')
	}
	return b.String(), recs
}

// awsCLI runs the AWS CLI against the gateway, with 5 MiB multipart parts so that an
// object of 11 MiB is uploaded in three.
func awsCLI(t *testing.T, g *versitygw.Gateway, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("aws"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the AWS CLI is missing: pip install awscli==1.45.11 awscrt==0.32.2")
		}
		t.Skip("the AWS CLI is missing: pip install awscli==1.45.11 awscrt==0.32.2")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "config")
	if err := os.WriteFile(conf, []byte("[default]\ns3 =\n  multipart_threshold = 5MB\n  multipart_chunksize = 5MB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("aws", append([]string{"--endpoint-url", g.URL}, args...)...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+versitygw.AccessKey, "AWS_SECRET_ACCESS_KEY="+versitygw.SecretKey,
		"AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE="+conf, "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "none"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("aws %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// sdkMultipart uploads data in 5 MiB parts with the SDK, with a composite or full-object
// checksum of alg.
func sdkMultipart(t *testing.T, c *s3.Client, bucket, key string, data []byte, alg types.ChecksumAlgorithm, typ types.ChecksumType) {
	t.Helper()
	ctx := context.Background()
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key),
		ChecksumAlgorithm: alg, ChecksumType: typ})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for i := 0; len(data) > 0; i++ {
		n := min(len(data), 5<<20)
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(data[:n]), ChecksumAlgorithm: alg})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(i + 1)),
			ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C, ChecksumCRC64NVME: out.ChecksumCRC64NVME})
		data = data[n:]
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key),
		UploadId: up.UploadId, ChecksumType: typ, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
}

// checksummedPrefix uploads objects with every kind of checksum the AWS CLI and the SDK
// write, whole and multipart, and one with none; it returns their records and keys.
func checksummedPrefix(t *testing.T, g *versitygw.Gateway, bucket string) (want []string, sizes map[string]int) {
	g.CreateBucket(t, bucket)
	dir := t.TempDir()
	sizes = map[string]int{}
	add := func(key string, recs []string) {
		want = append(want, recs...)
		for _, r := range recs {
			sizes[key] += len(r) + 1
		}
	}
	for _, alg := range []string{"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256", ""} {
		for _, size := range []struct {
			name string
			n    int
		}{{"small", 300}, {"multipart", 11 << 10}} {
			name := fmt.Sprintf("cli-%s-%s", size.name, cmpOr(alg, "default"))
			text, recs := checksummedRecords(name, size.n)
			file := filepath.Join(dir, name)
			if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"s3", "cp", "--only-show-errors", file, "s3://" + bucket + "/c/" + name}
			if alg != "" {
				args = append(args, "--checksum-algorithm", alg)
			}
			awsCLI(t, g, args...)
			add("c/"+name, recs)
		}
	}
	text, recs := checksummedRecords("sdk-composite-crc32c", 11<<10)
	sdkMultipart(t, g.Client, bucket, "c/sdk-composite-crc32c", []byte(text), types.ChecksumAlgorithmCrc32c, types.ChecksumTypeComposite)
	add("c/sdk-composite-crc32c", recs)
	text, recs = checksummedRecords("sdk-full-crc64nvme", 11<<10)
	sdkMultipart(t, g.Client, bucket, "c/sdk-full-crc64nvme", []byte(text), types.ChecksumAlgorithmCrc64nvme, types.ChecksumTypeFullObject)
	add("c/sdk-full-crc64nvme", recs)
	text, recs = checksummedRecords("sdk-put-crc32c", 2000)
	if _, err := g.Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("c/sdk-put-crc32c"),
		Body: strings.NewReader(text), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c}); err != nil {
		t.Fatal(err)
	}
	add("c/sdk-put-crc32c", recs)
	// Without a checksum: the SDK sends none (versitygw then stores a CRC64NVME).
	text, recs = checksummedRecords("sdk-put-none", 2000)
	if _, err := g.Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("c/sdk-put-none"),
		Body: strings.NewReader(text)}, func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired }); err != nil {
		t.Fatal(err)
	}
	add("c/sdk-put-none", recs)
	// A tar written with 4 MiB records (tar -b 8192): ~1 MiB of entry, then end-of-archive
	// zeros to 4 MiB, whole parts past the last record that a read must still check.
	text, recs = checksummedRecords("tar-padded", 1000)
	if err := os.WriteFile(filepath.Join(dir, "records.ndjson"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	tarFile := filepath.Join(dir, "padded.tar")
	if out, err := exec.Command("tar", "-b", "8192", "-cf", tarFile, "-C", dir, "records.ndjson").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	awsCLI(t, g, "s3", "cp", "--only-show-errors", tarFile, "s3://"+bucket+"/c/padded.tar", "--checksum-algorithm", "CRC32C")
	add("c/padded.tar", recs)
	st, err := os.Stat(tarFile)
	if err != nil {
		t.Fatal(err)
	}
	sizes["c/padded.tar"] = int(st.Size())
	// A zip of 10,000 one-record entries with long names: a central directory of ~2.4 MB
	// after the last entry's bytes, which the read takes from its tail, so whole parts of
	// the object lie past its last record; and an archive comment, which no zip reader
	// checks.
	entries := filepath.Join(dir, "entries")
	if err := os.Mkdir(entries, 0o700); err != nil {
		t.Fatal(err)
	}
	var zipRecs []string
	for i := range 10000 {
		name := fmt.Sprintf("%05d-%s.ndjson", i, strings.Repeat("n", 140))
		rec := fmt.Sprintf(`{"src":"zip-directory","i":%d}`, i)
		if err := os.WriteFile(filepath.Join(entries, name), []byte(rec+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		zipRecs = append(zipRecs, rec)
	}
	zipFile := filepath.Join(dir, "directory.zip")
	cmd := exec.Command("zip", "-q", "-r", "-z", zipFile, ".")
	cmd.Dir, cmd.Stdin = entries, strings.NewReader("an archive comment that no reader checks\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("zip: %v\n%s", err, out)
	}
	awsCLI(t, g, "s3", "cp", "--only-show-errors", zipFile, "s3://"+bucket+"/c/directory.zip", "--checksum-algorithm", "CRC32")
	want = append(want, zipRecs...)
	if st, err = os.Stat(zipFile); err != nil {
		t.Fatal(err)
	}
	sizes["c/directory.zip"] = int(st.Size())
	return want, sizes
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Objects the AWS CLI and the SDK wrote with every checksum they write are read with
// VerifyChecksums in ranged parts, exactly, and each ends verified.
func TestVerifyChecksums(t *testing.T) {
	g := versitygw.Start(t)
	p := faultproxy.New(t, g.URL)
	want, sizes := checksummedPrefix(t, g, "sums")
	const partBytes = 1 << 20
	// The parts of a composite object from its third MiB on break halfway: each resumes
	// from its next byte (a resume's range starts inside a part, and is not broken), and
	// its bytes are hashed once. Every GET of such a part breaks, not only the first: a
	// part fetched ahead may be cancelled before its break (prism split the read, and no
	// restriction took the fetch), and the part fetched again must still resume.
	var mu sync.Mutex
	broken := 0
	p.DecideGet = func(key, rng string, n int) faultproxy.Fault {
		mu.Lock()
		defer mu.Unlock()
		from := int64(-1)
		fmt.Sscanf(rng, "bytes=%d-", &from)
		if key != "c/cli-multipart-CRC32C" || from < 2*partBytes || from%partBytes != 0 {
			return faultproxy.Fault{}
		}
		broken++
		return faultproxy.Fault{ResetAt: 0.5}
	}
	cfg := s3io.Config{Bucket: "sums", Prefix: "c/", Endpoint: p.URL, UsePathStyle: true, VerifyChecksums: true, PartBytes: partBytes}
	pl, s := beam.NewPipelineWithRoot()
	records, fails := s3io.ReadWithFailures(s, cfg)
	passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, records), want)
	passert.Empty(s, fails)
	pr, err := ptest.RunWithMetrics(pl)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	c := s3test.Counters(pr, s3io.MetricsNamespace)
	// versitygw, like S3, stores a CRC64NVME for an object uploaded without a checksum.
	if c["checksums_verified"] != int64(len(sizes)) || c["checksums_missing"] != 0 || c["checksums_unchecked"] != 0 {
		t.Errorf("counters %v: want %d objects verified", c, len(sizes))
	}
	if broken == 0 || c["body_resumes"] < 1 || c["body_resumes"] > int64(broken) {
		t.Errorf("counters %v, %d GETs broken: want a resume for each broken GET read to its break", c, broken)
	}
	for k, size := range sizes {
		// Parts of at most PartBytes: every byte verified, still read in parallel parts.
		// (The proxy logs GetObjectAttributes, GET ?attributes, as an object GET too; an
		// object within one part is one whole-object GET.)
		ranged := 0
		for _, g := range p.Gets(k) {
			if g.Range != "" {
				ranged++
			}
		}
		if size > partBytes && ranged < (size+partBytes-1)/partBytes {
			t.Errorf("%s: %d ranged GETs of %d bytes, want it read in parts of at most %d", k, ranged, size, partBytes)
		}
	}
	t.Logf("counters: %v", c)
}

// A proxy flips one bit in one ranged part of a full-object CRC64NVME object and of a
// composite CRC32C one, and in a zip's comment, past its last record: exactly
// those three fail, as corrupt, naming the algorithm and both values, and every other
// object reads exactly. The bit is one of the stored object's, as
// a disk's would be: every GET that covers it gets it flipped, so that a part the reader
// fetched ahead and dropped (prism split the read, and no residual took the part) cannot
// let a second, clean read of it hide the corruption.
func TestVerifyChecksumsCorruptPart(t *testing.T) {
	g := versitygw.Start(t)
	p := faultproxy.New(t, g.URL)
	want, sizes := checksummedPrefix(t, g, "flipped")
	zipSize := sizes["c/directory.zip"]
	corrupted := map[string]string{"c/cli-multipart-CRC64NVME": "CRC64NVME", "c/sdk-composite-crc32c": "CRC32C", "c/directory.zip": "CRC32"}
	srcs := []string{"cli-multipart-CRC64NVME", "sdk-composite-crc32c", "zip-directory"}
	var mu sync.Mutex
	bad := map[string]int64{} // the object offset whose bit is flipped, by key
	flips := map[string]int{} // GETs that carried it, by key
	p.DecideGet = func(key, rng string, n int) faultproxy.Fault {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := corrupted[key]; !ok || !strings.HasPrefix(rng, "bytes=") {
			return faultproxy.Fault{}
		}
		from, to := int64(0), int64(-1)
		fmt.Sscanf(rng, "bytes=%d-%d", &from, &to)
		at, chosen := bad[key]
		if key == "c/directory.zip" && !chosen {
			// In the archive comment, the object's last bytes, past the central directory:
			// only the object's checksum can find it, and only if the read checks what lies
			// after its last record.
			at, chosen = int64(zipSize-10), true
			bad[key] = at
		}
		if !chosen {
			// 100 bytes into the first part read after the object's first 4 MiB: a later
			// part of its upload.
			if from < 4<<20 {
				return faultproxy.Fault{}
			}
			at = from + 100
			bad[key] = at
		}
		if at < from || to >= 0 && at > to {
			return faultproxy.Fault{}
		}
		flips[key]++
		return faultproxy.Fault{Flip: true, FlipAt: at - from}
	}
	cfg := s3io.Config{Bucket: "flipped", Prefix: "c/", Endpoint: p.URL, UsePathStyle: true, VerifyChecksums: true, PartBytes: 1 << 20}
	pl, s := beam.NewPipelineWithRoot()
	records, fails := s3io.ReadWithFailures(s, cfg)
	var others []string
	for _, r := range want {
		keep := true
		for _, src := range srcs {
			keep = keep && !strings.Contains(r, `"src":"`+src+`"`)
		}
		if keep {
			others = append(others, r)
		}
	}
	passert.EqualsList(s, beam.ParDo(s, &recordsNotFrom{Srcs: srcs}, records), others)
	failures := beam.ParDo(s, failureMessage, fails)
	var wantFailures []string
	for k, alg := range corrupted {
		wantFailures = append(wantFailures, k+"|corrupt|"+alg)
	}
	passert.EqualsList(s, failures, wantFailures)
	pr, err := ptest.RunWithMetrics(pl)
	if err != nil {
		for k := range corrupted {
			t.Logf("%s: bit at %d flipped in %d GETs; GETs %+v", k, bad[k], flips[k], p.Gets(k))
		}
		t.Fatalf("pipeline failed: %v", err)
	}
	if len(flips) != 3 {
		t.Fatalf("the proxy flipped a bit in %v, want a part of each of 3 objects", flips)
	}
	c := s3test.Counters(pr, s3io.MetricsNamespace)
	if c["objects_failed_corrupt"] != 3 || c["objects_failed"] != 3 {
		t.Errorf("counters %v: want exactly the 3 flipped objects corrupt", c)
	}
	t.Logf("flipped bits %v in %v GETs; counters %v", bad, flips, c)
}

// failureMessage renders a checksum Failure as key|reason|algorithm, once its message names
// the algorithm, the stored value and the computed one.
func failureMessage(f s3io.Failure) string {
	alg := "?"
	for _, a := range []string{"CRC64NVME", "CRC32C", "CRC32"} {
		if strings.Contains(f.Message, a+" ") && strings.Contains(f.Message, "stored") && strings.Contains(f.Message, "computed") {
			alg = a
			break
		}
	}
	return f.Key + "|" + string(f.Reason) + "|" + alg
}
