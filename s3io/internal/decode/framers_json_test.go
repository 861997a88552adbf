package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/spate-io/beam-s3/internal/s3test"
)

// jsonCases are framings every split of the input must give; err, when set, is the text
// the error must end with, and corrupt whether it wraps ErrCorrupt (else
// ErrTruncatedRecord).
var jsonCases = []struct {
	in      string
	want    []string
	err     string
	corrupt bool
}{
	{"", nil, "", false},
	{" \r\n\t", nil, "", false},
	{"[]", nil, "", false},
	{" [ ] ", nil, "", false},
	{"[1,2,3]", []string{"1", "2", "3"}, "", false},
	{" [ 1 , \"a\" , null , true , false , -0.5e+3 , {} , [] ]\n", []string{"1", `"a"`, "null", "true", "false", "-0.5e+3", "{}", "[]"}, "", false},
	{"[0,-0,0.0,1E9,2e-3,123456789012345678901234567890]", []string{"0", "-0", "0.0", "1E9", "2e-3", "123456789012345678901234567890"}, "", false},
	{"[[1,2],[3,[4]],[[]]]", []string{"[1,2]", "[3,[4]]", "[[]]"}, "", false},
	{"[\n  {\"a\" : [1, {\"b\":null}]},\n  {}\n]", []string{`{"a" : [1, {"b":null}]}`, "{}"}, "", false},
	{`{"Records":[{"a":1},{"b":[2,{"c":"]"}]}]}`, []string{`{"a":1}`, `{"b":[2,{"c":"]"}]}`}, "", false},
	{`{"Records":[]}`, nil, "", false},
	{`{}`, nil, "", false},
	{`{"a":1,"b":{"c":[1]},"d":"[x"}`, nil, "", false},
	{`{"x":{"y":[1]},"s":"[\"]","n":-1.5,"t":true,"Records":[1,2],"more":[3],"z":{}}`, []string{"1", "2"}, "", false},
	{`[1][2]{"R":[3]} [4]{}{"a":[]}[5]`, []string{"1", "2", "3", "4", "5"}, "", false},
	{`["a\"b\\","\u00e9\n\/\b\f\r\t","\ud83d\ude00",""]`, []string{`"a\"b\\"`, `"\u00e9\n\/\b\f\r\t"`, `"\ud83d\ude00"`, `""`}, "", false},
	{"[\"caf\xc3\xa9\",\"\xff\"]", []string{"\"caf\xc3\xa9\"", "\"\xff\""}, "", false},
	{"\xef\xbb\xbf[1]", []string{"1"}, "", false},
	{"\xef\xbb\xbf", nil, "", false},

	// A number element is emitted once the byte after it ends it, before that byte is
	// checked; a number at the end of the object ends nothing.
	{"[1,2 x]", []string{"1", "2"}, "json-array: at byte 5: expected ',' or ']' after an array element, found 'x'", true},
	{"[1,]", []string{"1"}, "at byte 3: expected a value, found ']'", true},
	{"[,1]", nil, "at byte 1: expected a value or ']' after '[', found ','", true},
	{"[1 2]", []string{"1"}, "at byte 3: expected ',' or ']' after an array element, found '2'", true},
	{`{"a" 1}`, nil, "at byte 5: expected ':' after an object key, found '1'", true},
	{`{"a":1,}`, nil, "at byte 7: expected a string key after ',' in an object, found '}'", true},
	{`{,}`, nil, "at byte 1: expected a string key or '}' after '{', found ','", true},
	{`{1:2}`, nil, "at byte 1: expected a string key or '}' after '{', found '1'", true},
	{"[}", nil, "at byte 1: expected a value or ']' after '[', found '}'", true},
	{"[[1}]", nil, "at byte 3: expected ',' or ']' after an array value, found '}'", true},
	{`{"a":[1}}`, []string{"1"}, "at byte 7: expected ',' or ']' after an array element, found '}'", true},
	{`{"a":{"b":1]}`, nil, "at byte 11: expected ',' or '}' after an object member, found ']'", true},
	{"1", nil, "at byte 0: expected '[' or '{' at the top level, found '1'", true},
	{`"s"`, nil, "at byte 0: expected '[' or '{' at the top level, found '\"'", true},
	{"[1] null", []string{"1"}, "at byte 4: expected '[' or '{' at the top level, found 'n'", true},
	{"\xef\xbb\xbf\xef\xbb\xbf[]", nil, "at byte 3: expected '[' or '{' at the top level, found byte 0xef", true},
	{"[1]]", []string{"1"}, "at byte 3: expected '[' or '{' at the top level, found ']'", true},
	{"[tru]", nil, "at byte 4: expected 'e' to continue a literal (true, false, null), found ']'", true},
	{"[nul", nil, "at byte 4: the object ends inside a literal", false},
	{"[01]", []string{"0"}, "at byte 2: expected ',' or ']' after an array element, found '1'", true},
	{"[1.]", nil, "at byte 3: expected a digit after a number's '.', found ']'", true},
	{"[-]", nil, "at byte 2: expected a digit after a number's '-', found ']'", true},
	{"[1e]", nil, "at byte 3: expected a digit or sign in a number's exponent, found ']'", true},
	{"[1e+]", nil, "at byte 4: expected a digit in a number's exponent, found ']'", true},
	{"[1.5.3]", []string{"1.5"}, "at byte 4: expected ',' or ']' after an array element, found '.'", true},
	{"[+1]", nil, "at byte 1: expected a value or ']' after '[', found '+'", true},
	{`["\x"]`, nil, `at byte 3: expected an escape (one of "\/bfnrtu) after a backslash, found 'x'`, true},
	{`["\u12g4"]`, nil, `at byte 6: expected a hex digit in a \u escape, found 'g'`, true},
	{"[\"a\nb\"]", nil, "at byte 3: expected a control character in a string to be escaped, found byte 0x0a", true},
	{`{"k` + "\t" + `":[]}`, nil, "at byte 3: expected a control character in a string to be escaped, found byte 0x09", true},
	{"[1", nil, "at byte 2: the object ends with 1 containers still open", false},
	{"[", nil, "at byte 1: the object ends with 1 containers still open", false},
	{`{"a":`, nil, "at byte 5: the object ends with 1 containers still open", false},
	{`["abc`, nil, "at byte 5: the object ends inside a string", false},
	{`["abc\`, nil, "at byte 6: the object ends inside a string", false},
	{`["\u12`, nil, "at byte 6: the object ends inside a string", false},
	{`{"Records":[{"a":1}`, []string{`{"a":1}`}, "at byte 19: the object ends with 2 containers still open", false},
	{`{"Records":[{"a":1},{"b"`, []string{`{"a":1}`}, "at byte 24: the object ends with 3 containers still open", false},
	{`[-`, nil, "at byte 2: the object ends inside a number", false},
}

func TestFrameJSONArray(t *testing.T) {
	for _, c := range jsonCases {
		got, err := s3test.FrameAll(t, NewJSONArrayFramer(), []byte(c.in))
		checkJSONResult(t, c.in, "whole", got, err, c.want, c.err, c.corrupt)
		// Every split point: a backslash, half a \u escape, a literal or a number at the
		// buffer's end, and every boundary between and inside nested values.
		for at := 1; at < len(c.in); at++ {
			got, _, err := readAll(t, "json-array", &splitReader{data: []byte(c.in), at: at}, 1<<20)
			if len(got) == 0 {
				got = nil
			}
			checkJSONResult(t, c.in, fmt.Sprintf("split at %d", at), got, err, c.want, c.err, c.corrupt)
		}
		got, _, err = readAll(t, "json-array", &sizedReader{data: []byte(c.in), sizes: []byte{1}}, 1<<20)
		if len(got) == 0 {
			got = nil
		}
		checkJSONResult(t, c.in, "bytewise", got, err, c.want, c.err, c.corrupt)
		if c.err == "" {
			checkAgainstEncodingJSON(t, []byte(c.in))
		}
	}
}

func checkJSONResult(t *testing.T, in, how string, got []string, err error, want []string, wantErr string, corrupt bool) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("json-array %q (%s) = %q, want %q", in, how, got, want)
	}
	if wantErr == "" {
		if err != nil {
			t.Errorf("json-array %q (%s): %v", in, how, err)
		}
		return
	}
	kind := ErrTruncatedRecord
	if corrupt {
		kind = ErrCorrupt
	}
	if !errors.Is(err, kind) || err == nil || !strings.HasSuffix(err.Error(), wantErr) {
		t.Errorf("json-array %q (%s): err = %v, want %v ending %q", in, how, err, kind, wantErr)
	}
}

func TestFrameJSONArrayDepth(t *testing.T) {
	ok := strings.Repeat("[", jsonMaxDepth) + strings.Repeat("]", jsonMaxDepth)
	if _, err := s3test.FrameAll(t, NewJSONArrayFramer(), []byte(ok)); err != nil {
		t.Errorf("nesting %d deep: %v", jsonMaxDepth, err)
	}
	deep := "[" + ok + "]"
	_, err := s3test.FrameAll(t, NewJSONArrayFramer(), []byte(deep))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "at byte 10000: expected nesting at most 10000 deep") {
		t.Errorf("nesting %d deep: err = %v", jsonMaxDepth+1, err)
	}
	if json.Valid([]byte(deep)) || !json.Valid([]byte(ok)) {
		t.Error("encoding/json's depth limit is not the framer's")
	}
}

// TestFrameJSONArraySkipsIncrementally feeds a skipped member far larger than the record
// limit: it must be consumed as it is scanned, not held for a record.
func TestFrameJSONArraySkipsIncrementally(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"big":{"s":"`)
	for b.Len() < 3<<20 {
		b.WriteString(`ab\"\\\u00e9 [{,:`)
	}
	b.WriteString(`","n":[1,[2,{"x":-1.5e3}]]},"big2":[`)
	n := 0
	for ; b.Len() < 6<<20; n++ {
		b.WriteString(`[1,"x"],`)
	}
	b.WriteString(`0],"Records":[{"k":"v"},[true]],"after":{"s":"`)
	for b.Len() < 9<<20 {
		b.WriteString(`0123456789`)
	}
	b.WriteString(`"}}`)
	data := b.Bytes()
	// big2 is the first array-valued member, so its elements are the records.
	got, _, err := readAll(t, "json-array", &sizedReader{data: data, sizes: []byte{90, 7, 1, 64}}, 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n+1 {
		t.Fatalf("%d records, want %d", len(got), n+1)
	}
	for i, r := range got[:len(got)-1] {
		if r != `[1,"x"]` {
			t.Fatalf("record %d = %q", i, r)
		}
	}
	if got[len(got)-1] != "0" {
		t.Fatalf("last record %q", got[len(got)-1])
	}
	// Without an array before it, the skipped string of 3 MiB goes by as well.
	data = bytes.Replace(data, []byte(`"big2":[`), []byte(`"big2":{"a":[`), 1)
	data = bytes.Replace(data, []byte(`0],"Records"`), []byte(`0]},"Records"`), 1)
	got, _, err = readAll(t, "json-array", &sizedReader{data: data, sizes: []byte{90, 7, 1, 64}}, 64)
	if err != nil || !reflect.DeepEqual(got, []string{`{"k":"v"}`, "[true]"}) {
		t.Fatalf("records %.200q, err %v", got, err)
	}
}

// TestFrameJSONArrayResumesScan checks that an element growing by one byte per call is
// scanned once, not from its start on every call, and that the scan state is dropped once
// the element is returned.
func TestFrameJSONArrayResumesScan(t *testing.T) {
	elem := `{"a":"` + strings.Repeat(`x\"`, 50) + `","b":[1.5e-3,true,null,"\u00e9"],"c":{}}`
	data := []byte("[" + elem + `,"z"]`)
	f := &jsonArrayFramer{}
	if adv, rec, err := f.Frame(data, false); adv != 1 || rec != nil || err != nil {
		t.Fatalf("prefix: %d, %q, %v", adv, rec, err)
	}
	data = data[1:]
	for k := 1; k < len(elem); k++ {
		adv, rec, err := f.Frame(data[:k], false)
		if adv != 0 || rec != nil || err != nil {
			t.Fatalf("prefix %d: %d, %q, %v", k, adv, rec, err)
		}
		if f.resume != k {
			t.Fatalf("prefix %d: resume at %d", k, f.resume)
		}
	}
	adv, rec, err := f.Frame(data, false)
	if adv != len(elem) || string(rec) != elem || cap(rec) != len(rec) || err != nil {
		t.Fatalf("element: %d, %q, %v", adv, rec, err)
	}
	if f.inRecord || f.resume != 0 {
		t.Fatalf("scan state kept after the element: %v, %d", f.inRecord, f.resume)
	}
	got, err := s3test.FrameAll(t, f, data[adv:])
	if err != nil || !reflect.DeepEqual(got, []string{`"z"`}) {
		t.Fatalf("rest: %q, %v", got, err)
	}

	// Bytes already scanned are not looked at again: changing them between calls (which a
	// reader never does) shows where the scan resumed. Rescanned from its start, the second
	// data would hold the number 12345.
	f = &jsonArrayFramer{}
	if adv, rec, err := f.Frame([]byte(`["abcd`), false); adv != 1 || rec != nil || err != nil {
		t.Fatalf("prefix: %d, %q, %v", adv, rec, err)
	}
	if adv, rec, err := f.Frame([]byte(`"abcd`), false); adv != 0 || rec != nil || err != nil {
		t.Fatalf("first part: %d, %q, %v", adv, rec, err)
	}
	if adv, rec, err := f.Frame([]byte(`12345"]`), false); adv != 6 || string(rec) != `12345"` || err != nil {
		t.Fatalf("resumed: %d, %q, %v; want the scan to go on from byte 5", adv, rec, err)
	}
}

// cloudTrailRecord returns an event shaped like CloudTrail's, about 1 KiB.
func cloudTrailRecord(rng *rand.Rand) map[string]any {
	names := []string{"GetObject", "PutObject", "AssumeRole", "DescribeInstances", "ListBuckets"}
	return map[string]any{
		"eventVersion": "1.08",
		"userIdentity": map[string]any{
			"type": "AssumedRole", "principalId": fmt.Sprintf("AROA%016X:session-%d", rng.Uint64(), rng.IntN(1000)),
			"arn":       fmt.Sprintf("arn:aws:sts::%012d:assumed-role/role-%d/session", rng.IntN(1e12), rng.IntN(50)),
			"accountId": fmt.Sprintf("%012d", rng.IntN(1e12)), "accessKeyId": fmt.Sprintf("ASIA%016X", rng.Uint64()),
			"sessionContext": map[string]any{
				"sessionIssuer": map[string]any{"type": "Role", "arn": "arn:aws:iam::123456789012:role/x", "userName": "x"},
				"attributes":    map[string]any{"creationDate": "2026-11-30T10:00:00Z", "mfaAuthenticated": "false"},
			},
		},
		"eventTime":         fmt.Sprintf("2026-11-%02dT%02d:%02d:%02dZ", 1+rng.IntN(30), rng.IntN(24), rng.IntN(60), rng.IntN(60)),
		"eventSource":       "s3.amazonaws.com",
		"eventName":         names[rng.IntN(len(names))],
		"awsRegion":         "eu-west-1",
		"sourceIPAddress":   fmt.Sprintf("10.%d.%d.%d", rng.IntN(256), rng.IntN(256), rng.IntN(256)),
		"userAgent":         `[aws-sdk-go-v2/1.30.3 os/linux lang/go#1.26 md/GOOS#linux "quoted" \ backslash]`,
		"requestParameters": map[string]any{"bucketName": "logs", "key": fmt.Sprintf("p/%d/é.json", rng.IntN(1e6)), "Host": "logs.s3.eu-west-1.amazonaws.com"},
		"responseElements":  nil,
		"additionalEventData": map[string]any{
			"SignatureVersion": "SigV4", "bytesTransferredIn": rng.IntN(1e6), "bytesTransferredOut": rng.Float64() * 1e3,
			"x-amz-id-2": fmt.Sprintf("%x", rng.Uint64()),
		},
		"requestID": fmt.Sprintf("%016X", rng.Uint64()), "eventID": fmt.Sprintf("%08x-%04x-%04x", rng.Uint32(), rng.IntN(65536), rng.IntN(65536)),
		"readOnly": rng.IntN(2) == 0, "resources": []any{map[string]any{"type": "AWS::S3::Object", "ARN": "arn:aws:s3:::logs/p"}, map[string]any{"accountId": "123456789012", "type": "AWS::S3::Bucket"}},
		"eventType": "AwsApiCall", "managementEvent": false, "recipientAccountId": "123456789012", "eventCategory": "Data",
		"tlsDetails": map[string]any{"tlsVersion": "TLSv1.3", "cipherSuite": "TLS_AES_128_GCM_SHA256", "clientProvidedHostHeader": "logs.s3.eu-west-1.amazonaws.com"},
	}
}

// TestFrameJSONArrayMatchesEncodingJSON frames generated documents, compact and indented,
// with members before and after the records, and compares with encoding/json.
func TestFrameJSONArrayMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 60; round++ {
		var recs []any
		for n := rng.IntN(20); n > 0; n-- {
			switch rng.IntN(4) {
			case 0:
				recs = append(recs, []any{1, "two", nil, []any{}, map[string]any{"k": []any{true}}})
			case 1:
				recs = append(recs, rng.NormFloat64())
			default:
				recs = append(recs, cloudTrailRecord(rng))
			}
		}
		var doc any = recs
		if rng.IntN(2) == 0 {
			doc = map[string]any{"A": map[string]any{"x": []any{1}}, "B": "[", "Records": recs, "Z": []any{2}}
		}
		var data []byte
		var err error
		if rng.IntN(2) == 0 {
			data, err = json.Marshal(doc)
		} else {
			data, err = json.MarshalIndent(doc, " ", "\t")
		}
		if err != nil {
			t.Fatal(err)
		}
		if rng.IntN(3) == 0 {
			data = append(append(data, "\r\n"...), data...) // concatenated documents
		}
		checkAgainstEncodingJSON(t, data)
		checkChunking(t, "json-array", data, &sizedReader{data: data, sizes: []byte{byte(1 + round), 5, 80}}, "generated")
	}
}
