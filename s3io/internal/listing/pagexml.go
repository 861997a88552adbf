package listing

import (
	"bytes"
	"errors"
	"strconv"
	"time"

	smithytime "github.com/aws/smithy-go/time"
)

// errNotFast is what parsePage returns for anything it does not decode; the caller only
// needs to know to use the SDK's decoder instead, which reports the precise error if any.
var errNotFast = errors.New("s3io: ListObjectsV2 response not decoded by the fast parser")

// parsePage decodes a ListBucketResult document into a Page, with the values the SDK's
// deserializer gives the Page's fields. It takes what S3 sends when asked for
// EncodingType=url (ASCII text, the predefined entities, attributes such as xmlns) and
// returns errNotFast for anything else, for the SDK to decode. Elements a Page has no field
// for are still checked as the SDK checks them (a number must parse, a value must be one
// run of text), so that a document decoded here is one the SDK decodes without error.
func parsePage(body []byte) (*Page, error) {
	p := parser{b: body}
	if err := p.prolog(); err != nil {
		return nil, err
	}
	name, empty, err := p.startTag()
	if err != nil || !bytes.EqualFold(name, []byte("ListBucketResult")) {
		return nil, errNotFast
	}
	page := &Page{}
	// The SDK stops reading at the root's end tag, so does this.
	return page, p.structure(page, inRoot, name, empty)
}

// The structures of the document, what a field holds, and what the Page keeps of it.
const inRoot, inContents, inRestoreStatus, inOwner, inCommonPrefixes = 0, 1, 2, 3, 4

const isString, isInt, isBool, isTime, isStructure = 0, 1, 2, 3, 4

const checked, keepEncodingType, keepTruncated, keepNextToken, keepKeyCount, keepKey, keepETag,
	keepSize, keepModified, keepStorageClass, keepInProgress, keepExpiry, keepFolder = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12

// field is an element the SDK decodes: in which structure, its name in lower case, what it
// holds, and the structure it opens or what the Page keeps of it.
type field struct {
	in, kind, id int
	name         string
}

// fields are the elements of ListObjectsV2Output the SDK decodes.
var fields = []field{
	{inRoot, isStructure, inContents, "contents"}, {inRoot, isStructure, inCommonPrefixes, "commonprefixes"},
	{inRoot, isString, keepEncodingType, "encodingtype"}, {inRoot, isBool, keepTruncated, "istruncated"},
	{inRoot, isString, keepNextToken, "nextcontinuationtoken"}, {inRoot, isInt, keepKeyCount, "keycount"},
	{inRoot, isInt, checked, "maxkeys"}, {inRoot, isString, checked, "continuationtoken"},
	{inRoot, isString, checked, "delimiter"}, {inRoot, isString, checked, "name"},
	{inRoot, isString, checked, "prefix"}, {inRoot, isString, checked, "startafter"},
	{inContents, isString, keepKey, "key"}, {inContents, isString, keepETag, "etag"},
	{inContents, isInt, keepSize, "size"}, {inContents, isTime, keepModified, "lastmodified"},
	{inContents, isString, keepStorageClass, "storageclass"}, {inContents, isString, checked, "checksumalgorithm"},
	{inContents, isString, checked, "checksumtype"}, {inContents, isStructure, inRestoreStatus, "restorestatus"},
	{inContents, isStructure, inOwner, "owner"},
	{inRestoreStatus, isBool, keepInProgress, "isrestoreinprogress"}, {inRestoreStatus, isTime, keepExpiry, "restoreexpirydate"},
	{inOwner, isString, checked, "id"}, {inOwner, isString, checked, "displayname"},
	{inCommonPrefixes, isString, keepFolder, "prefix"},
}

// fieldOf finds the field name is in structure in, matching case-insensitively as the SDK
// does (strings.EqualFold). Names are ASCII (startTag refuses others, whose Unicode folding
// could match a known name) and the known ones are letters only, so setting each byte's
// case bit compares exactly.
func fieldOf(in int, name []byte) *field {
next:
	for i := range fields {
		f := &fields[i]
		if f.in != in || len(f.name) != len(name) {
			continue
		}
		for j, c := range name {
			if c|0x20 != f.name[j] {
				continue next
			}
		}
		return f
	}
	return nil
}

// maxDepth bounds the nesting of elements, so a hostile document cannot make the
// recursion grow without bound; deeper documents go to the SDK.
const maxDepth = 256

// structure decodes the children of the structure elem (whose start tag has been read): an
// element of ListObjectsV2Output, or one the SDK skips (in == -1), checked all the same.
func (p *parser) structure(page *Page, in int, elem []byte, empty bool) error {
	if p.depth++; p.depth > maxDepth {
		return errNotFast
	}
	defer func() { p.depth-- }()
	for !empty {
		start, err := p.nextTag()
		if err != nil {
			return err
		}
		if !start {
			return p.endTag(elem)
		}
		name, leaf, err := p.startTag()
		if err != nil {
			return err
		}
		f := fieldOf(in, name)
		switch {
		case f == nil:
			err = p.structure(page, -1, name, leaf)
		case f.kind == isStructure:
			p.open(page, f.id)
			err = p.structure(page, f.id, name, leaf)
			p.close(page, f.id)
		default:
			var v []byte
			if v, err = p.value(name, leaf); err == nil {
				err = p.set(page, f, v)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) open(page *Page, s int) {
	switch s {
	case inContents:
		page.Objects = append(page.Objects, Object{})
		p.obj = object{strs: p.obj.strs[:0], key: [2]int{-1, -1}, etag: [2]int{-1, -1}}
	case inCommonPrefixes:
		page.Folders = append(page.Folders, "")
	case inRestoreStatus:
		p.obj.restore = true // repeated, they add to one status, as in the SDK
	}
}

func (p *parser) close(page *Page, s int) {
	if s != inContents {
		return
	}
	o, obj := &page.Objects[len(page.Objects)-1], &p.obj
	if obj.key[0] >= 0 || obj.etag[0] >= 0 {
		strs := string(obj.strs)
		if obj.key[0] >= 0 {
			o.Key = strs[obj.key[0]:obj.key[1]]
		}
		if obj.etag[0] >= 0 {
			o.ETag = strs[obj.etag[0]:obj.etag[1]]
		}
	}
	o.Restored = obj.restore && !obj.inProgress && obj.expiry
}

// set checks the value v of field f as the SDK decodes it, and keeps it if the Page holds
// it. A repeated field overwrites, as in the SDK.
func (p *parser) set(page *Page, f *field, v []byte) error {
	var n int64
	var b bool
	var t time.Time
	var err error
	switch f.kind {
	case isInt:
		// As the SDK parses (int32 fields are then truncated); the string does not escape.
		if n, err = strconv.ParseInt(string(v), 10, 64); err != nil {
			err = errNotFast
		}
	case isBool:
		if b, err = strconv.ParseBool(string(v)); err != nil {
			err = errNotFast
		}
	case isTime:
		t, err = parseTime(v)
	}
	if err != nil {
		return err
	}
	var o *Object // the object, for the fields of Contents
	obj := &p.obj
	if f.in == inContents {
		o = &page.Objects[len(page.Objects)-1]
	}
	switch f.id {
	case keepEncodingType:
		page.EncodingType = enum(v)
	case keepTruncated:
		page.Truncated = b
	case keepNextToken:
		page.NextContinuationToken = string(v)
	case keepKeyCount:
		if page.Objects == nil {
			// S3 sends KeyCount first: size the slice once (within what the document could
			// hold) rather than regrow it through the page.
			page.Objects = make([]Object, 0, min(max(int(int32(n)), 1), len(p.b)/len("<Contents/>")))
		}
	case keepKey:
		obj.key = [2]int{len(obj.strs), len(obj.strs) + len(v)}
		obj.strs = append(obj.strs, v...)
	case keepETag:
		obj.etag = [2]int{len(obj.strs), len(obj.strs) + len(v)}
		obj.strs = append(obj.strs, v...)
	case keepSize:
		o.Size = n
	case keepModified:
		o.LastModified = t
	case keepStorageClass:
		o.StorageClass = enum(v)
	case keepInProgress:
		obj.inProgress = b
	case keepExpiry:
		obj.expiry = true
	case keepFolder:
		page.Folders[len(page.Folders)-1] = string(v)
	}
	return nil
}

// enum returns the values S3 sends for enums without allocating a string for each object.
func enum(v []byte) string {
	for _, s := range [...]string{"STANDARD", "url", "STANDARD_IA", "INTELLIGENT_TIERING", "GLACIER", "GLACIER_IR", "DEEP_ARCHIVE", "ONEZONE_IA"} {
		if string(v) == s {
			return s
		}
	}
	return string(v)
}

// parseTime parses a timestamp as smithy's ParseDateTime does: S3's layout (one field of
// every object) directly, anything else with ParseDateTime.
func parseTime(v []byte) (time.Time, error) {
	if t, ok := parseS3Time(v); ok {
		return t, nil
	}
	t, err := smithytime.ParseDateTime(string(v))
	if err != nil {
		return time.Time{}, errNotFast
	}
	return t, nil
}
