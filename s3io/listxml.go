package s3io

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithytime "github.com/aws/smithy-go/time"
	"github.com/aws/smithy-go/tracing"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// The SDK decodes a ListObjectsV2 page with encoding/xml through smithy's NodeDecoder, and
// that costs about 16 ms of CPU per 1,000-key page (79% of the call's CPU is spent in
// awsRestxml_deserializeDocumentObject). Listing 1,000,000 keys thus spends 16 s of CPU on
// XML alone, which on a 2-core worker bounds how many pages can be listed in parallel. The
// decoder below replaces only the decoding of a successful response; the request, signing,
// retries, errors and response metadata stay the SDK's. Whatever it is not sure to decode
// exactly as the SDK would, it hands to the SDK's own deserializer, on the response already
// received.

// maxListBody bounds the body the fast decoder buffers; a larger body is streamed to the
// SDK's deserializer instead. A 1,000-key page is a few hundred KiB.
const maxListBody = 64 << 20

// maxPooledListBody bounds the buffers kept for reuse, so one huge page does not pin its
// buffer for the life of the process.
const maxPooledListBody = 8 << 20

// listBodyPool recycles response buffers: the decoded output copies what it keeps, so the
// buffer is free once a page is decoded, and reusing it spares a large allocation per page.
var listBodyPool sync.Pool

// fastListDecoding is an option for Client.ListObjectsV2 (and its paginator) that decodes
// successful responses with parseListObjectsV2 instead of the SDK's encoding/xml decoder.
func fastListDecoding(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, swapListDeserializer)
}

// swapListDeserializer puts fastListDeserializer where the operation's deserializer is, so
// that it runs at the same point of the stack, inside the retry loop and around the
// middlewares that collect response metadata. It leaves other operations alone: the fast
// decoder only knows the ListObjectsV2 document.
func swapListDeserializer(stack *middleware.Stack) error {
	if stack.ID() != "ListObjectsV2" {
		return nil
	}
	orig, ok := stack.Deserialize.Get("OperationDeserializer")
	if !ok {
		return errors.New("s3io: ListObjectsV2 stack has no OperationDeserializer")
	}
	if _, done := orig.(*fastListDeserializer); done {
		return nil
	}
	_, err := stack.Deserialize.Swap("OperationDeserializer", &fastListDeserializer{sdk: orig})
	return err
}

// fastListDeserializer decodes 2xx ListObjectsV2 responses itself and gives everything else
// (errors, transport failures, documents it cannot decode) to the SDK's deserializer.
type fastListDeserializer struct {
	sdk   middleware.DeserializeMiddleware
	limit int // the largest body decoded here; 0 means maxListBody
}

// ID returns the ID of the middleware it replaces, so that middlewares positioned
// relative to the SDK's deserializer still find it.
func (*fastListDeserializer) ID() string { return "OperationDeserializer" }

// HandleDeserialize decodes the response received by next. It never sends a request of its
// own: the SDK's deserializer, when needed, is given the response already received.
func (m *fastListDeserializer) HandleDeserialize(
	ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler,
) (out middleware.DeserializeOutput, metadata middleware.Metadata, err error) {
	out, metadata, err = next.HandleDeserialize(ctx, in)
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if err != nil || !ok || resp.Body == nil || resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return m.sdkDecode(ctx, in, out, metadata, err)
	}

	_, span := tracing.StartSpan(ctx, "OperationDeserializer")
	defer span.End()

	body := resp.Body
	var buf []byte
	if p, _ := listBodyPool.Get().(*[]byte); p != nil {
		buf = (*p)[:0]
	}
	limit := m.limit
	if limit <= 0 {
		limit = maxListBody
	}
	buf, tooBig, readErr := readListBody(body, resp.ContentLength, buf, limit)
	if tooBig || readErr != nil {
		// Let the SDK see the same bytes, then the rest of the body or the same read
		// error, so that it fails or succeeds exactly as it would have.
		var rest io.Reader = body
		if readErr != nil {
			rest = listReadError{readErr}
		}
		resp.Body = listReplayBody{Reader: io.MultiReader(bytes.NewReader(buf), rest), Closer: body}
		return m.sdkDecode(ctx, in, out, metadata, nil)
	}

	output, perr := parseListObjectsV2(buf)
	if perr != nil {
		// The buffer now belongs to the SDK's decoder (and to whatever keeps the
		// response), so it is not returned to the pool.
		resp.Body = listReplayBody{Reader: bytes.NewReader(buf), Closer: body}
		return m.sdkDecode(ctx, in, out, metadata, nil)
	}
	if cap(buf) <= maxPooledListBody {
		listBodyPool.Put(&buf)
	}
	smithyhttp.CloseResponseBody(ctx, resp, false, nil)

	// The only HTTP binding of the output, decoded as the SDK does.
	if hv := resp.Header.Values("x-amz-request-charged"); len(hv) != 0 {
		hv[0] = strings.TrimSpace(hv[0])
		output.RequestCharged = types.RequestCharged(hv[0])
	}
	out.Result = output
	return out, metadata, nil
}

// sdkDecode runs the SDK's deserializer on a response that has already been received: its
// next handler returns that response instead of sending the request again.
func (m *fastListDeserializer) sdkDecode(ctx context.Context, in middleware.DeserializeInput,
	out middleware.DeserializeOutput, metadata middleware.Metadata, err error,
) (middleware.DeserializeOutput, middleware.Metadata, error) {
	return m.sdk.HandleDeserialize(ctx, in, listReceived{out: out, metadata: metadata, err: err})
}

// listReceived is a DeserializeHandler that returns what the transport already returned.
type listReceived struct {
	out      middleware.DeserializeOutput
	metadata middleware.Metadata
	err      error
}

// HandleDeserialize returns the recorded result, whatever the input.
func (r listReceived) HandleDeserialize(context.Context, middleware.DeserializeInput) (
	middleware.DeserializeOutput, middleware.Metadata, error,
) {
	return r.out, r.metadata, r.err
}

// listReplayBody serves the buffered bytes to the SDK's deserializer while closing the
// transport's body, which the connection's reuse depends on.
type listReplayBody struct {
	io.Reader
	io.Closer
}

// listReadError fails every read with the error the transport's body failed with.
type listReadError struct{ err error }

// Read returns the recorded error.
func (r listReadError) Read([]byte) (int, error) { return 0, r.err }

// readListBody appends body to buf until EOF. It reports tooBig, having read one byte more
// than limit, rather than buffer an unbounded body; sizeHint (the Content-Length, or -1)
// sizes the buffer up front so a page is read without regrowing.
func readListBody(body io.Reader, sizeHint int64, buf []byte, limit int) (
	_ []byte, tooBig bool, err error,
) {
	if sizeHint >= 0 && sizeHint <= int64(limit) && int64(cap(buf)) <= sizeHint {
		// One byte more than the content, so the read that returns EOF has room.
		buf = make([]byte, 0, sizeHint+1)
	}
	for {
		if len(buf) > limit {
			return buf, true, nil
		}
		if len(buf) == cap(buf) {
			grow := max(cap(buf), 32<<10)
			grow = min(grow, limit+1-len(buf))
			buf = append(buf[:cap(buf)], make([]byte, grow)...)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):min(cap(buf), limit+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, len(buf) > limit, nil
		}
		if err != nil {
			return buf, false, err
		}
	}
}

// parseListObjectsV2 decodes a ListBucketResult document into the output the SDK's
// deserializer would produce from it. It accepts a subset of what encoding/xml accepts
// (one that S3-compatible servers stay within) and returns an error for the rest; for the
// documents it accepts, the output is the SDK's, field for field.
func parseListObjectsV2(body []byte) (*s3.ListObjectsV2Output, error) {
	p := listParser{b: body}
	if err := p.prolog(); err != nil {
		return nil, err
	}
	name, empty, err := p.startTag()
	if err != nil {
		return nil, err
	}
	if !listEqualFold(name, "ListBucketResult") {
		return nil, errListXML
	}
	out := &s3.ListObjectsV2Output{}
	if !empty {
		if err := p.listBucketResult(out, name); err != nil {
			return nil, err
		}
	}
	// The SDK stops reading at the root's end tag, so whatever follows is ignored, as here.
	return out, nil
}

// listParser is a cursor over a document being decoded.
type listParser struct {
	b       []byte
	pos     int
	scratch []byte // decoded text of the value being read, when it needed decoding
	strs    []byte // the strings of the object being decoded
}

// listEmptyValue is the value of an element without content: the SDK decodes it to ""
// (not to an absent field), so it must be distinguishable from nil.
var listEmptyValue = []byte{}

// listBucketResult decodes the children of the root element.
func (p *listParser) listBucketResult(out *s3.ListObjectsV2Output, root []byte) error {
	for {
		name, empty, more, err := p.nextChild(root)
		if !more {
			return err
		}
		switch listFieldOf(name) {
		case lfContents:
			if out.Contents == nil && out.KeyCount != nil {
				// S3 sends KeyCount first: size the slice once rather than regrow it
				// through a page (bounded by what the document could possibly hold).
				n := min(int(max(*out.KeyCount, 1)), len(p.b)/len("<Contents/>"))
				out.Contents = make([]types.Object, 0, n)
			}
			out.Contents = append(out.Contents, types.Object{})
			err = p.object(&out.Contents[len(out.Contents)-1], name, empty)
		case lfCommonPrefixes:
			out.CommonPrefixes = append(out.CommonPrefixes, types.CommonPrefix{})
			err = p.commonPrefix(&out.CommonPrefixes[len(out.CommonPrefixes)-1], name, empty)
		case lfContinuationToken:
			out.ContinuationToken, err = p.stringPtr(name, empty)
		case lfDelimiter:
			out.Delimiter, err = p.stringPtr(name, empty)
		case lfEncodingType:
			var v []byte
			if v, err = p.value(name, empty); err == nil {
				out.EncodingType = types.EncodingType(listEnum(v))
			}
		case lfIsTruncated:
			out.IsTruncated, err = p.boolPtr(name, empty)
		case lfKeyCount:
			out.KeyCount, err = p.int32Ptr(name, empty)
		case lfMaxKeys:
			out.MaxKeys, err = p.int32Ptr(name, empty)
		case lfName:
			out.Name, err = p.stringPtr(name, empty)
		case lfNextContinuationToken:
			out.NextContinuationToken, err = p.stringPtr(name, empty)
		case lfPrefix:
			out.Prefix, err = p.stringPtr(name, empty)
		case lfStartAfter:
			out.StartAfter, err = p.stringPtr(name, empty)
		default:
			err = p.skip(name, empty)
		}
		if err != nil {
			return err
		}
	}
}

// listObjectCells holds an object's pointed-to fields in one allocation instead of one
// each; they are kept and released together anyway.
type listObjectCells struct {
	key, etag string
	size      int64
	modified  time.Time
}

// object decodes a Contents element.
func (p *listParser) object(obj *types.Object, elem []byte, empty bool) error {
	if empty {
		return nil
	}
	var cells *listObjectCells
	// The key and the ETag share one allocation: they are gathered in p.strs and made
	// strings when the element ends.
	p.strs = p.strs[:0]
	key, etag := [2]int{-1, -1}, [2]int{-1, -1}
	for {
		name, empty, more, err := p.nextChild(elem)
		if !more {
			if err == nil && (key[0] >= 0 || etag[0] >= 0) {
				strs := string(p.strs)
				if key[0] >= 0 {
					cells.key = strs[key[0]:key[1]]
				}
				if etag[0] >= 0 {
					cells.etag = strs[etag[0]:etag[1]]
				}
			}
			return err
		}
		f := listFieldOf(name)
		if cells == nil && (f == lfKey || f == lfETag || f == lfSize || f == lfLastModified) {
			cells = new(listObjectCells)
		}
		var v []byte
		switch f {
		case lfKey:
			if v, err = p.value(name, empty); err == nil {
				key = [2]int{len(p.strs), len(p.strs) + len(v)}
				p.strs = append(p.strs, v...)
				obj.Key = &cells.key
			}
		case lfETag:
			if v, err = p.value(name, empty); err == nil {
				etag = [2]int{len(p.strs), len(p.strs) + len(v)}
				p.strs = append(p.strs, v...)
				obj.ETag = &cells.etag
			}
		case lfSize:
			if v, err = p.value(name, empty); err == nil {
				if cells.size, err = listParseInt(v); err == nil {
					obj.Size = &cells.size
				}
			}
		case lfLastModified:
			if v, err = p.value(name, empty); err == nil {
				if cells.modified, err = parseListTime(v); err == nil {
					obj.LastModified = &cells.modified
				}
			}
		case lfStorageClass:
			if v, err = p.value(name, empty); err == nil {
				obj.StorageClass = types.ObjectStorageClass(listEnum(v))
			}
		case lfChecksumAlgorithm:
			if v, err = p.value(name, empty); err == nil {
				obj.ChecksumAlgorithm = append(obj.ChecksumAlgorithm, types.ChecksumAlgorithm(listEnum(v)))
			}
		case lfChecksumType:
			if v, err = p.value(name, empty); err == nil {
				obj.ChecksumType = types.ChecksumType(listEnum(v))
			}
		case lfRestoreStatus:
			// A repeated element adds to the same struct, as in the SDK.
			if obj.RestoreStatus == nil {
				obj.RestoreStatus = &types.RestoreStatus{}
			}
			err = p.restoreStatus(obj.RestoreStatus, name, empty)
		case lfOwner:
			if obj.Owner == nil {
				obj.Owner = &types.Owner{}
			}
			err = p.owner(obj.Owner, name, empty)
		default:
			err = p.skip(name, empty)
		}
		if err != nil {
			return err
		}
	}
}

// restoreStatus decodes a RestoreStatus element.
func (p *listParser) restoreStatus(rs *types.RestoreStatus, elem []byte, empty bool) error {
	if empty {
		return nil
	}
	for {
		name, empty, more, err := p.nextChild(elem)
		if !more {
			return err
		}
		switch listFieldOf(name) {
		case lfIsRestoreInProgress:
			rs.IsRestoreInProgress, err = p.boolPtr(name, empty)
		case lfRestoreExpiryDate:
			var v []byte
			if v, err = p.value(name, empty); err == nil {
				var t time.Time
				if t, err = parseListTime(v); err == nil {
					rs.RestoreExpiryDate = &t
				}
			}
		default:
			err = p.skip(name, empty)
		}
		if err != nil {
			return err
		}
	}
}

// owner decodes an Owner element (present when the request asks for FetchOwner).
func (p *listParser) owner(o *types.Owner, elem []byte, empty bool) error {
	if empty {
		return nil
	}
	for {
		name, empty, more, err := p.nextChild(elem)
		if !more {
			return err
		}
		switch listFieldOf(name) {
		case lfDisplayName:
			o.DisplayName, err = p.stringPtr(name, empty)
		case lfID:
			o.ID, err = p.stringPtr(name, empty)
		default:
			err = p.skip(name, empty)
		}
		if err != nil {
			return err
		}
	}
}

// commonPrefix decodes a CommonPrefixes element.
func (p *listParser) commonPrefix(cp *types.CommonPrefix, elem []byte, empty bool) error {
	if empty {
		return nil
	}
	for {
		name, empty, more, err := p.nextChild(elem)
		if !more {
			return err
		}
		if listFieldOf(name) == lfPrefix {
			cp.Prefix, err = p.stringPtr(name, empty)
		} else {
			err = p.skip(name, empty)
		}
		if err != nil {
			return err
		}
	}
}

// The element names the decoder knows, in every structure it decodes.
const (
	lfUnknown = iota
	lfCommonPrefixes
	lfContents
	lfContinuationToken
	lfDelimiter
	lfEncodingType
	lfIsTruncated
	lfKeyCount
	lfMaxKeys
	lfName
	lfNextContinuationToken
	lfPrefix
	lfStartAfter
	lfChecksumAlgorithm
	lfChecksumType
	lfETag
	lfKey
	lfLastModified
	lfOwner
	lfRestoreStatus
	lfSize
	lfStorageClass
	lfIsRestoreInProgress
	lfRestoreExpiryDate
	lfDisplayName
	lfID
	lfCount
)

// listFieldNames are the known element names, in lower case (and letters only, which
// listFieldOf relies on).
var listFieldNames = [lfCount]string{
	lfCommonPrefixes:        "commonprefixes",
	lfContents:              "contents",
	lfContinuationToken:     "continuationtoken",
	lfDelimiter:             "delimiter",
	lfEncodingType:          "encodingtype",
	lfIsTruncated:           "istruncated",
	lfKeyCount:              "keycount",
	lfMaxKeys:               "maxkeys",
	lfName:                  "name",
	lfNextContinuationToken: "nextcontinuationtoken",
	lfPrefix:                "prefix",
	lfStartAfter:            "startafter",
	lfChecksumAlgorithm:     "checksumalgorithm",
	lfChecksumType:          "checksumtype",
	lfETag:                  "etag",
	lfKey:                   "key",
	lfLastModified:          "lastmodified",
	lfOwner:                 "owner",
	lfRestoreStatus:         "restorestatus",
	lfSize:                  "size",
	lfStorageClass:          "storageclass",
	lfIsRestoreInProgress:   "isrestoreinprogress",
	lfRestoreExpiryDate:     "restoreexpirydate",
	lfDisplayName:           "displayname",
	lfID:                    "id",
}

// listFieldsByLen lists the known names by length, so a name is compared with few of them.
var listFieldsByLen = func() (by [32][]uint8) {
	for f := lfUnknown + 1; f < lfCount; f++ {
		by[len(listFieldNames[f])] = append(by[len(listFieldNames[f])], uint8(f))
	}
	return by
}()

// listFieldOf identifies an element name case-insensitively, as the SDK matches names
// (with strings.EqualFold). Names are ASCII (startTag refuses others, whose Unicode case
// folding could make them match a known name), and the known names are letters only, so
// setting the case bit of each byte is an exact case-insensitive comparison.
func listFieldOf(name []byte) int {
	if len(name) >= len(listFieldsByLen) {
		return lfUnknown
	}
next:
	for _, f := range listFieldsByLen[len(name)] {
		known := listFieldNames[f]
		for i, c := range name {
			if c|0x20 != known[i] {
				continue next
			}
		}
		return int(f)
	}
	return lfUnknown
}

// listEqualFold reports whether the ASCII name b equals s, ignoring case.
func listEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// stringPtr reads a text element into a newly allocated string.
func (p *listParser) stringPtr(name []byte, empty bool) (*string, error) {
	v, err := p.value(name, empty)
	if err != nil {
		return nil, err
	}
	s := string(v)
	return &s, nil
}

// boolPtr reads a boolean element with the SDK's (strconv's) syntax.
func (p *listParser) boolPtr(name []byte, empty bool) (*bool, error) {
	v, err := p.value(name, empty)
	if err != nil {
		return nil, err
	}
	b, err := strconv.ParseBool(string(v))
	if err != nil {
		return nil, errListXML
	}
	return &b, nil
}

// int32Ptr reads an integer element the way the SDK does: parsed as an int64, then
// converted (and truncated) to int32.
func (p *listParser) int32Ptr(name []byte, empty bool) (*int32, error) {
	v, err := p.value(name, empty)
	if err != nil {
		return nil, err
	}
	n, err := listParseInt(v)
	if err != nil {
		return nil, err
	}
	i := int32(n)
	return &i, nil
}

// listParseInt parses a decimal integer as strconv.ParseInt(s, 10, 64) does, without
// converting the bytes to a string in the common case of a plain unsigned number.
func listParseInt(v []byte) (int64, error) {
	if len(v) > 0 && len(v) <= 18 {
		var n int64
		for _, c := range v {
			if c < '0' || c > '9' {
				goto slow
			}
			n = n*10 + int64(c-'0')
		}
		return n, nil
	}
slow:
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, errListXML
	}
	return n, nil
}

// parseListTime parses a timestamp as smithy's ParseDateTime does. The layout S3 uses,
// 2006-01-02T15:04:05.000Z, is parsed directly (it is one field of every object); anything
// else, or any value out of range, goes to ParseDateTime.
func parseListTime(v []byte) (time.Time, error) {
	if len(v) >= 20 && v[4] == '-' && v[7] == '-' && v[10] == 'T' && v[13] == ':' &&
		v[16] == ':' && v[len(v)-1] == 'Z' {
		century, ok1 := listTwoDigits(v[0:2])
		yy, ok2 := listTwoDigits(v[2:4])
		month, ok3 := listTwoDigits(v[5:7])
		day, ok4 := listTwoDigits(v[8:10])
		hour, ok5 := listTwoDigits(v[11:13])
		minute, ok6 := listTwoDigits(v[14:16])
		sec, ok7 := listTwoDigits(v[17:19])
		year := century*100 + yy
		frac := v[19 : len(v)-1]
		nsec, ok8 := 0, true
		if len(frac) > 0 {
			// Up to nanoseconds; longer fractions are truncated by time.Parse, left to it.
			if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
				ok8 = false
			} else if nsec, ok8 = listDigits(frac[1:]); ok8 {
				for range 10 - len(frac) {
					nsec *= 10
				}
			}
		}
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && ok8 &&
			month >= 1 && month <= 12 && day >= 1 && day <= listDaysIn(month, year) &&
			hour < 24 && minute < 60 && sec < 60 {
			secs := listDaysSinceEpoch(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
			// The same Time as time.Date(..., time.UTC) returns: UTC's location is nil.
			return time.Unix(secs, int64(nsec)).UTC(), nil
		}
	}
	t, err := smithytime.ParseDateTime(string(v))
	if err != nil {
		return time.Time{}, errListXML
	}
	return t, nil
}

// listTwoDigits parses two ASCII digits.
func listTwoDigits(b []byte) (int, bool) {
	hi, lo := b[0]-'0', b[1]-'0'
	return int(hi)*10 + int(lo), hi <= 9 && lo <= 9
}

// listDaysSinceEpoch returns the days from 1970-01-01 to a valid date of the proleptic
// Gregorian calendar (the civil-from-days inverse of Howard Hinnant's algorithms).
func listDaysSinceEpoch(year, month, day int) int64 {
	y := int64(year)
	if month <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400                               // [0, 399]
	doy := int64((153*((month+9)%12)+2)/5 + day - 1) // [0, 365], from March 1st
	doe := yoe*365 + yoe/4 - yoe/100 + doy           // [0, 146096]
	return era*146097 + doe - 719468
}

// listDigits parses a non-empty run of ASCII digits.
func listDigits(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// listDaysIn returns the number of days of month in year, as time.Parse checks it.
func listDaysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// listEnum returns the enum values S3 sends without allocating a string for each object.
func listEnum(v []byte) string {
	switch string(v) {
	case "STANDARD":
		return "STANDARD"
	case "STANDARD_IA":
		return "STANDARD_IA"
	case "INTELLIGENT_TIERING":
		return "INTELLIGENT_TIERING"
	case "GLACIER":
		return "GLACIER"
	case "GLACIER_IR":
		return "GLACIER_IR"
	case "DEEP_ARCHIVE":
		return "DEEP_ARCHIVE"
	case "ONEZONE_IA":
		return "ONEZONE_IA"
	case "REDUCED_REDUNDANCY":
		return "REDUCED_REDUNDANCY"
	case "EXPRESS_ONEZONE":
		return "EXPRESS_ONEZONE"
	case "CRC32":
		return "CRC32"
	case "CRC32C":
		return "CRC32C"
	case "CRC64NVME":
		return "CRC64NVME"
	case "SHA1":
		return "SHA1"
	case "SHA256":
		return "SHA256"
	case "FULL_OBJECT":
		return "FULL_OBJECT"
	case "COMPOSITE":
		return "COMPOSITE"
	case "url":
		return "url"
	}
	return string(v)
}

// The scanner. It mirrors encoding/xml's (strict) decoder closely enough that a document
// it accepts is one encoding/xml accepts and reads the same way: same text after entity
// and newline decoding, same element nesting. Constructs S3 never sends (namespace
// prefixes, non-ASCII names, DOCTYPE, processing instructions other than the XML
// declaration) are refused rather than mirrored.

// listTextClass marks the bytes a text scan must look at; all others are plain ASCII
// text. listAttrClass adds the quotes, which end attribute values.
var listTextClass, listAttrClass = func() (text, attr [256]bool) {
	for i := range 0x20 {
		text[i] = true
	}
	text['\t'], text['\n'] = false, false
	for _, b := range []byte{'<', '&', '>', '\r'} {
		text[b] = true
	}
	for i := 0x80; i < 0x100; i++ {
		text[i] = true
	}
	attr = text
	attr['"'], attr['\''] = true, true
	return text, attr
}()

// listPlainText reports whether b, text without '<', is printable ASCII without '&' and
// '>': text that is valid and that encoding/xml delivers unchanged, by far the most common.
// It checks eight bytes at a time, as values are scanned once per object field.
func listPlainText(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		amp, gt := x^(ones*'&'), x^(ones*'>')
		// Bytes >= 0x80, bytes < 0x20, '&' and '>' (the zero bytes of amp and gt).
		if x&highs|(x-ones*0x20)&^x&highs|(amp-ones)&^amp&highs|(gt-ones)&^gt&highs != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if listTextClass[c] || c < 0x20 {
			return false
		}
	}
	return true
}

// listNameStart and listNameChar are the bytes that may start and continue an element
// name: ASCII only, and no ':' (no namespace prefixes).
var listNameStart, listNameChar = func() (start, char [256]bool) {
	for c := range 256 {
		start[c] = 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_'
		char[c] = start[c] || '0' <= c && c <= '9' || c == '-' || c == '.'
	}
	return start, char
}()

// listIsSpace reports whether c is XML white space as encoding/xml skips it inside tags.
func listIsSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r'
}

// listIsXMLChar reports whether r is in the XML 1.0 character range, as encoding/xml
// checks it on decoded text.
func listIsXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// skipSpace returns the first index at or after i that is not white space.
func (p *listParser) skipSpace(i int) int {
	for i < len(p.b) && listIsSpace(p.b[i]) {
		i++
	}
	return i
}

// prolog skips what may precede the root element: white space, comments and the XML
// declaration, and leaves the cursor at the root's start tag.
func (p *listParser) prolog() error {
	for {
		i := p.skipSpace(p.pos)
		p.pos = i
		if len(p.b)-i < 2 || p.b[i] != '<' {
			return errListXML
		}
		switch p.b[i+1] {
		case '?':
			if err := p.xmlDecl(); err != nil {
				return err
			}
		case '!':
			if err := p.comment(); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// xmlDecl skips an XML declaration, accepting only the forms for which encoding/xml
// reads version 1.0 and the UTF-8 encoding.
func (p *listParser) xmlDecl() error {
	rest := p.b[p.pos:]
	if !bytes.HasPrefix(rest, []byte("<?xml")) {
		return errListXML
	}
	end := bytes.Index(rest, []byte("?>"))
	if end < 0 {
		return errListXML
	}
	decl := rest[len("<?xml"):end]
	if len(decl) > 0 && !listIsSpace(decl[0]) {
		return errListXML // another processing instruction, such as <?xml-stylesheet
	}
	for _, attr := range [...]struct {
		name     string
		optional bool
		ok       func([]byte) bool
	}{
		{"version", false, func(v []byte) bool { return string(v) == "1.0" }},
		{"encoding", true, func(v []byte) bool { return listEqualFold(v, "utf-8") }},
		{"standalone", true, func(v []byte) bool { return string(v) == "yes" || string(v) == "no" }},
	} {
		j := 0
		for j < len(decl) && listIsSpace(decl[j]) {
			j++
		}
		if j == 0 || !bytes.HasPrefix(decl[j:], []byte(attr.name+"=")) {
			if attr.optional {
				continue
			}
			return errListXML
		}
		v := decl[j+len(attr.name)+1:]
		if len(v) < 2 || (v[0] != '"' && v[0] != '\'') {
			return errListXML
		}
		k := bytes.IndexByte(v[1:], v[0])
		if k < 0 || !attr.ok(v[1:1+k]) {
			return errListXML
		}
		decl = v[2+k:]
	}
	for _, c := range decl {
		if !listIsSpace(c) {
			return errListXML
		}
	}
	p.pos += end + 2
	return nil
}

// comment skips a comment starting at the cursor. As in encoding/xml, "--" may only end it.
func (p *listParser) comment() error {
	rest := p.b[p.pos:]
	if !bytes.HasPrefix(rest, []byte("<!--")) {
		return errListXML // a DOCTYPE or other declaration
	}
	k := bytes.Index(rest[4:], []byte("--"))
	if k < 0 || 4+k+2 >= len(rest) || rest[4+k+2] != '>' {
		return errListXML
	}
	p.pos += 4 + k + 3
	return nil
}

// cdata scans a CDATA section starting at the cursor and returns its raw content and
// whether it holds a carriage return (which encoding/xml turns into a newline).
func (p *listParser) cdata() (raw []byte, cr bool, err error) {
	rest := p.b[p.pos:]
	if !bytes.HasPrefix(rest, []byte("<![CDATA[")) {
		return nil, false, errListXML
	}
	rest = rest[len("<![CDATA["):]
	k := bytes.Index(rest, []byte("]]>"))
	if k < 0 {
		return nil, false, errListXML
	}
	raw = rest[:k]
	for i := 0; i < len(raw); {
		c := raw[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' {
				if c != '\r' {
					return nil, false, errListXML
				}
				cr = true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size == 1 || !listIsXMLChar(r) {
			return nil, false, errListXML
		}
		i += size
	}
	p.pos += len("<![CDATA[") + k + 3
	return raw, cr, nil
}

// scanText validates character data from the cursor up to the next '<' (or the end of the
// document) and returns where it ends and whether it needs decoding (entity or character
// references, carriage returns). quote, if not zero, is the quote ending an attribute value.
func (p *listParser) scanText(quote byte) (end int, decode bool, err error) {
	b := p.b
	start := p.pos
	i := start
	class := &listTextClass
	if quote != 0 {
		class = &listAttrClass
	}
	for i < len(b) {
		c := b[i]
		if !class[c] {
			i++
			continue
		}
		switch {
		case c == quote && quote != 0:
			return i, decode, nil
		case c == '<':
			if quote != 0 {
				return 0, false, errListXML
			}
			return i, decode, nil
		case c == '&':
			n, _, ok := listCharRef(b[i:])
			if !ok {
				return 0, false, errListXML
			}
			decode = true
			i += n
		case c == '\r':
			decode = true
			i++
		case c == '>':
			// "]]>" may not appear in text, though it may in an attribute value.
			if quote == 0 && i-start >= 2 && b[i-1] == ']' && b[i-2] == ']' {
				return 0, false, errListXML
			}
			i++
		case c == '"' || c == '\'':
			i++
		case c < utf8.RuneSelf:
			return 0, false, errListXML // a control character
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 || !listIsXMLChar(r) {
				return 0, false, errListXML
			}
			i += size
		}
	}
	if quote != 0 {
		return 0, false, errListXML
	}
	return i, decode, nil
}

// listCharRef decodes the entity or character reference at the start of b, returning its
// length and the character. Like encoding/xml, it knows the five predefined entities only,
// turns a surrogate into U+FFFD and refuses characters outside the XML character range
// (encoding/xml checks the decoded text, so "&#x1;" fails in the SDK too).
func listCharRef(b []byte) (n int, r rune, ok bool) {
	if len(b) >= 2 && b[1] == '#' {
		i, base := 2, rune(10)
		if i < len(b) && b[i] == 'x' {
			i, base = 3, 16
		}
		start := i
		for ; i < len(b); i++ {
			c := b[i]
			var d rune
			switch {
			case '0' <= c && c <= '9':
				d = rune(c - '0')
			case base == 16 && 'a' <= c && c <= 'f':
				d = rune(c-'a') + 10
			case base == 16 && 'A' <= c && c <= 'F':
				d = rune(c-'A') + 10
			default:
				d = -1
			}
			if d < 0 {
				break
			}
			r = r*base + d
			if r > utf8.MaxRune {
				return 0, 0, false
			}
		}
		if i == start || i >= len(b) || b[i] != ';' {
			return 0, 0, false
		}
		if 0xD800 <= r && r <= 0xDFFF {
			r = utf8.RuneError
		}
		if !listIsXMLChar(r) {
			return 0, 0, false
		}
		return i + 1, r, true
	}
	if len(b) >= 4 {
		switch {
		case b[1] == 'l' && b[2] == 't' && b[3] == ';':
			return 4, '<', true
		case b[1] == 'g' && b[2] == 't' && b[3] == ';':
			return 4, '>', true
		case len(b) >= 5 && b[1] == 'a' && b[2] == 'm' && b[3] == 'p' && b[4] == ';':
			return 5, '&', true
		case len(b) >= 6 && string(b[1:6]) == "quot;":
			return 6, '"', true
		case len(b) >= 6 && string(b[1:6]) == "apos;":
			return 6, '\'', true
		}
	}
	return 0, 0, false
}

// decodeText returns raw with its references decoded and carriage returns (alone or
// before a newline) turned into newlines, as encoding/xml delivers text. cdata text has
// no references. The result is in p.scratch, valid until the next call.
func (p *listParser) decodeText(raw []byte, cdata bool) []byte {
	out := p.scratch[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '&' && !cdata:
			n, r, _ := listCharRef(raw[i:]) // validated by scanText
			out = utf8.AppendRune(out, r)
			i += n
		case c == '\r':
			out = append(out, '\n')
			i++
			if i < len(raw) && raw[i] == '\n' {
				i++
			}
		default:
			j := i + 1
			for j < len(raw) && raw[j] != '\r' && (cdata || raw[j] != '&') {
				j++
			}
			out = append(out, raw[i:j]...)
			i = j
		}
	}
	p.scratch = out
	return out
}

// nextTag moves the cursor over the text, CDATA sections and comments between tags (which
// the SDK ignores inside structures) to the next tag, and reports whether it is a start
// tag (or else an end tag).
func (p *listParser) nextTag() (start bool, err error) {
	for {
		if p.pos >= len(p.b) {
			return false, errListXML
		}
		if p.b[p.pos] != '<' {
			end, _, err := p.scanText(0)
			if err != nil {
				return false, err
			}
			p.pos = end
			continue
		}
		if p.pos+1 >= len(p.b) {
			return false, errListXML
		}
		switch p.b[p.pos+1] {
		case '/':
			return false, nil
		case '?':
			return false, errListXML
		case '!':
			if p.pos+2 < len(p.b) && p.b[p.pos+2] == '[' {
				if _, _, err := p.cdata(); err != nil {
					return false, err
				}
			} else if err := p.comment(); err != nil {
				return false, err
			}
		default:
			return true, nil
		}
	}
}

// startTag reads the start tag at the cursor and returns the element's name and whether
// the tag is self-closing. Attributes are validated and ignored.
func (p *listParser) startTag() (name []byte, empty bool, err error) {
	b := p.b
	i := p.pos + 1
	start := i
	if i >= len(b) || !listNameStart[b[i]] {
		return nil, false, errListXML
	}
	for i++; i < len(b) && listNameChar[b[i]]; i++ {
	}
	name = b[start:i]
	for {
		if i >= len(b) || b[i] == ':' || b[i] >= utf8.RuneSelf {
			return nil, false, errListXML
		}
		i = p.skipSpace(i)
		if i >= len(b) {
			return nil, false, errListXML
		}
		switch b[i] {
		case '>':
			p.pos = i + 1
			return name, false, nil
		case '/':
			if i+1 < len(b) && b[i+1] == '>' {
				p.pos = i + 2
				return name, true, nil
			}
			return nil, false, errListXML
		}
		if i, err = p.attribute(i); err != nil {
			return nil, false, err
		}
	}
}

// attribute validates the attribute at i and returns the index after it.
func (p *listParser) attribute(i int) (int, error) {
	b := p.b
	if !listNameStart[b[i]] {
		return 0, errListXML
	}
	colons := 0
	for i++; i < len(b) && (listNameChar[b[i]] || b[i] == ':'); i++ {
		if b[i] == ':' {
			colons++
		}
	}
	if colons > 1 {
		return 0, errListXML
	}
	if i < len(b) && b[i] >= utf8.RuneSelf {
		return 0, errListXML
	}
	i = p.skipSpace(i)
	if i >= len(b) || b[i] != '=' {
		return 0, errListXML
	}
	i = p.skipSpace(i + 1)
	if i >= len(b) || (b[i] != '"' && b[i] != '\'') {
		return 0, errListXML
	}
	quote := b[i]
	p.pos = i + 1
	end, _, err := p.scanText(quote)
	if err != nil {
		return 0, err
	}
	return end + 1, nil
}

// endTag reads the end tag at the cursor, which must close the element name.
func (p *listParser) endTag(name []byte) error {
	b := p.b
	i := p.pos + 2
	if len(b)-i < len(name) || !bytes.Equal(b[i:i+len(name)], name) {
		return errListXML
	}
	i += len(name)
	if i < len(b) && (listNameChar[b[i]] || b[i] == ':' || b[i] >= utf8.RuneSelf) {
		return errListXML
	}
	i = p.skipSpace(i)
	if i >= len(b) || b[i] != '>' {
		return errListXML
	}
	p.pos = i + 1
	return nil
}

// value reads the content and end tag of a simple-typed element, whose start tag has been
// read. The SDK accepts one run of text or one CDATA section, or nothing (""): a comment
// or a mix of text and CDATA is an error there too. The result is either part of the
// document or in p.scratch; callers copy what they keep.
func (p *listParser) value(name []byte, empty bool) ([]byte, error) {
	if empty {
		return listEmptyValue, nil
	}
	b := p.b
	i := p.pos
	if i >= len(b) {
		return nil, errListXML
	}
	var v []byte
	switch {
	case b[i] != '<':
		if n := bytes.IndexByte(b[i:], '<'); n >= 0 {
			var ok bool
			if v, ok = p.plainValue(b[i : i+n]); ok {
				p.pos = i + n
				break
			}
		}
		end, decode, err := p.scanText(0)
		if err != nil {
			return nil, err
		}
		v = b[i:end]
		if decode {
			v = p.decodeText(v, false)
		}
		p.pos = end
	case i+1 < len(b) && b[i+1] == '/':
		v = listEmptyValue
	default:
		raw, cr, err := p.cdata()
		if err != nil {
			return nil, err
		}
		v = raw
		if cr {
			v = p.decodeText(raw, true)
		}
	}
	if len(b)-p.pos < 2 || b[p.pos] != '<' || b[p.pos+1] != '/' {
		return nil, errListXML
	}
	if err := p.endTag(name); err != nil {
		return nil, err
	}
	return v, nil
}

// plainValue decodes the text of a value if it is printable ASCII and references, the
// form of all but unusual keys (an ETag is &quot;-quoted hex), faster than scanText and
// decodeText would; it reports false for anything else, which they then handle.
func (p *listParser) plainValue(raw []byte) ([]byte, bool) {
	k := bytes.IndexByte(raw, '&')
	if k < 0 {
		return raw, listPlainText(raw)
	}
	out := p.scratch[:0]
	for k >= 0 {
		if !listPlainText(raw[:k]) {
			return nil, false
		}
		out = append(out, raw[:k]...)
		n, r, ok := listCharRef(raw[k:])
		if !ok {
			return nil, false
		}
		out = utf8.AppendRune(out, r)
		raw = raw[k+n:]
		k = bytes.IndexByte(raw, '&')
	}
	if !listPlainText(raw) {
		return nil, false
	}
	out = append(out, raw...)
	p.scratch = out
	return out, true
}

// maxListSkipDepth bounds the nesting of an ignored element, so a hostile document cannot
// make the skip's stack grow without bound; deeper documents go to the SDK.
const maxListSkipDepth = 256

// nextChild reads up to the next child element of elem: its name, or more == false once
// elem's end tag (or an error) is read, with err telling which.
func (p *listParser) nextChild(elem []byte) (name []byte, empty, more bool, err error) {
	start, err := p.nextTag()
	if err != nil {
		return nil, false, false, err
	}
	if !start {
		return nil, false, false, p.endTag(elem)
	}
	name, empty, err = p.startTag()
	return name, empty, err == nil, err
}

// skip reads over an element the output has no field for (whose start tag has been read),
// validating it as encoding/xml would, without allocating unless it is deeply nested.
func (p *listParser) skip(name []byte, empty bool) error {
	if empty {
		return nil
	}
	var names [16][]byte
	open := append(names[:0], name)
	for len(open) > 0 {
		start, err := p.nextTag()
		if err != nil {
			return err
		}
		if !start {
			if err := p.endTag(open[len(open)-1]); err != nil {
				return err
			}
			open = open[:len(open)-1]
			continue
		}
		child, childEmpty, err := p.startTag()
		if err != nil {
			return err
		}
		if !childEmpty {
			if len(open) >= maxListSkipDepth {
				return errListXML
			}
			open = append(open, child)
		}
	}
	return nil
}
