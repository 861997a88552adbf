package listing

import (
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"

	smithy "github.com/aws/smithy-go"
)

// compact removes the indentation between tags.
var compact = regexp.MustCompile(`>\s+<`)

// pretty is a pretty-printed page with most of what S3 sends.
const pretty = `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name>
  <Prefix>data/</Prefix>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <KeyCount>3</KeyCount>
  <MaxKeys>3</MaxKeys>
  <Delimiter>/</Delimiter>
  <IsTruncated>true</IsTruncated>
  <Contents>
    <Key>data/2024/01/part-00000001.json.gz</Key>
    <LastModified>2024-01-02T03:04:05.678Z</LastModified>
    <ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag>
    <ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm>
    <ChecksumType>FULL_OBJECT</ChecksumType>
    <Size>1234</Size>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <Contents>
    <Key>data/2024/01/part-00000002.json.gz</Key>
    <LastModified>2024-02-29T23:59:59Z</LastModified>
    <ETag>"fedcba9876543210fedcba9876543210-3"</ETag>
    <Size>0</Size>
    <StorageClass>GLACIER</StorageClass>
    <RestoreStatus>
      <IsRestoreInProgress>false</IsRestoreInProgress>
      <RestoreExpiryDate>2024-03-05T00:00:00.000Z</RestoreExpiryDate>
    </RestoreStatus>
  </Contents>
  <Contents>
    <Key>data/2024/01/part-00000003.json.gz</Key>
    <LastModified>2024-01-02T03:04:05.123456789Z</LastModified>
    <ETag>&quot;00&quot;</ETag>
    <Size>9223372036854775807</Size>
    <StorageClass>DEEP_ARCHIVE</StorageClass>
    <RestoreStatus>
      <IsRestoreInProgress>true</IsRestoreInProgress>
    </RestoreStatus>
  </Contents>
  <CommonPrefixes>
    <Prefix>data/2024/02/</Prefix>
  </CommonPrefixes>
</ListBucketResult>
`

// docs are documents the fast parser must decode, each exactly as the SDK does.
var docs = []struct {
	name string
	doc  string
}{
	{"pretty", pretty},
	{"compact", compact.ReplaceAllString(pretty, "><")},
	{"empty", `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix>nothing/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`},
	{"self-closing-root", `<ListBucketResult/>`},
	{"common-prefixes-only", `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix></Prefix><Delimiter>/</Delimiter><KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>` +
		`<CommonPrefixes><Prefix>a/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>b/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>c &amp; d/</Prefix></CommonPrefixes><CommonPrefixes/></ListBucketResult>`},
	{"absent-optional", `<ListBucketResult><Contents><Key>only-key</Key></Contents><Contents></Contents><Contents/></ListBucketResult>`},
	{"empty-values", `<ListBucketResult><Prefix/><Delimiter></Delimiter><StartAfter /><ContinuationToken></ContinuationToken><Contents><Key/><ETag></ETag><StorageClass/></Contents></ListBucketResult>`},
	{"times", `<ListBucketResult>` +
		`<Contents><Key>a</Key><LastModified>2024-01-02T03:04:05Z</LastModified></Contents>` +
		`<Contents><Key>b</Key><LastModified>2024-01-02T03:04:05.1Z</LastModified></Contents>` +
		`<Contents><Key>c</Key><LastModified>2024-01-02T03:04:05.123456789Z</LastModified></Contents>` +
		`<Contents><Key>d</Key><LastModified>2024-01-02T03:04:05.1234567891Z</LastModified></Contents>` +
		`<Contents><Key>e</Key><LastModified>2024-01-02T03:04:05+02:00</LastModified></Contents>` +
		`<Contents><Key>f</Key><LastModified>2024-01-02T03:04:05.5-07:30</LastModified></Contents>` +
		`<Contents><Key>g</Key><LastModified>2024-01-02T03:04:05.25</LastModified></Contents>` +
		`<Contents><Key>h</Key><LastModified>2000-02-29T00:00:00.000Z</LastModified></Contents>` +
		`<Contents><Key>i</Key><LastModified>0001-01-01T00:00:00Z</LastModified></Contents>` +
		`</ListBucketResult>`},
	{"encoding-url", `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix>a%20b%2F</Prefix><StartAfter>a%20b%2Fc</StartAfter><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated><Contents><Key>a%20b%2Fc%0Ad%01</Key><Size>1</Size></Contents></ListBucketResult>`},
	{"owner", `<ListBucketResult><Contents><Key>k</Key><Owner><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID></Owner></Contents><Contents><Key>k2</Key><Owner><DisplayName>d</DisplayName></Owner><Owner><ID>i</ID></Owner></Contents></ListBucketResult>`},
	{"case-insensitive-names", `<listbucketresult><NAME>b</NAME><contents><KEY>k</KEY><etag>e</etag><SIZE>5</SIZE><storageclass>STANDARD_IA</storageclass><restorestatus><isrestoreinprogress>TRUE</isrestoreinprogress></restorestatus></contents><commonprefixes><PREFIX>p</PREFIX></commonprefixes></listbucketresult>`},
	{"duplicates", `<ListBucketResult><Name>a</Name><Name>b</Name><Contents><Key>1</Key><Key>2</Key><ChecksumAlgorithm>CRC32</ChecksumAlgorithm><ChecksumAlgorithm>SHA256</ChecksumAlgorithm><ChecksumAlgorithm/>` +
		`<RestoreStatus><IsRestoreInProgress>true</IsRestoreInProgress></RestoreStatus><RestoreStatus><RestoreExpiryDate>2024-01-01T00:00:00Z</RestoreExpiryDate></RestoreStatus></Contents></ListBucketResult>`},
	{"numbers", `<ListBucketResult><KeyCount>4294967297</KeyCount><MaxKeys>-2147483649</MaxKeys><IsTruncated>1</IsTruncated><Contents><Size>+5</Size></Contents><Contents><Size>-1</Size></Contents><Contents><Size>007</Size></Contents><Contents><Size>123456789012345678</Size></Contents><Contents><Size>-9223372036854775808</Size></Contents></ListBucketResult>`},
	{"trailing", `<ListBucketResult><Name>b</Name></ListBucketResult><trailing>garbage & < ]]>`},
	{"brackets", `<ListBucketResult><Contents><Key>a]]b]&gt;c]</Key><ETag>]]&gt;</ETag></Contents></ListBucketResult>`},
	{"entities", `<ListBucketResult><Contents><Key>a&amp;b&lt;c&gt;d&quot;e&apos;f&#34;g&#x22;h&#13;i&#x1F600;j&#10;k&#9;l&#0065;&#x00041;</Key><ETag>&quot;x&quot;</ETag></Contents></ListBucketResult>`},
	{"surrogate-reference", `<ListBucketResult><Contents><Key>&#xD800;&#57343;</Key></Contents></ListBucketResult>`},
	{"go-encoder", `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix>data%2F</Prefix><StartAfter></StartAfter><NextContinuationToken>dG9rZW4=</NextContinuationToken><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>` +
		`<Contents><ChecksumAlgorithm>CRC32</ChecksumAlgorithm><ETag>&#34;d41d8cd98f00b204e9800998ecf8427e&#34;</ETag><Key>data%2Fa%20b%26c</Key><LastModified>2024-01-02T03:04:05.678Z</LastModified><Size>5</Size><StorageClass>STANDARD</StorageClass></Contents><EncodingType>url</EncodingType></ListBucketResult>`},
}

// sdkDocs are documents the SDK decodes that hold what S3 does not send when asked for
// EncodingType=url (CDATA, comments, carriage returns, non-ASCII text): the fast parser
// hands them to the SDK, and the call with the option must return exactly the SDK's page.
var sdkDocs = []struct {
	name string
	doc  string
}{
	{"crlf", strings.ReplaceAll(pretty, "\n", "\r\n")},
	{"cdata", "<ListBucketResult><Contents><Key><![CDATA[a<b>&amp;c]]]]></Key><ETag><![CDATA[]]></ETag></Contents><Prefix><![CDATA[x\r\ny\rz]]></Prefix></ListBucketResult>"},
	{"cdata-in-structure", `<ListBucketResult><![CDATA[ignored]]><Contents><![CDATA[<Key>x</Key>]]><Key>k</Key></Contents></ListBucketResult>`},
	{"unicode", `<ListBucketResult><Name>bücket</Name><Contents><Key>データ/日本語 ファイル.txt</Key></Contents><Contents><Key>emoji/😀/ü/ẞ/ﬀ</Key></Contents></ListBucketResult>`},
	{"bom-inside", "<ListBucketResult><Contents><Key>zero\ufeffwidth\u00a0\U0010FFFD</Key></Contents></ListBucketResult>"},
	{"unknown-elements", `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/" xmlns:xsi='http://www.w3.org/2001/XMLSchema-instance'>
  <Unknown a="1" b='&lt;2&gt;'><Nested><Deeper x="y">text &amp; more<Leaf/></Deeper><!-- a comment --><![CDATA[<Key>not a key</Key>]]></Nested></Unknown>
  <Contents>
    <Key>k</Key>
    <Unknown><Key>not this</Key></Unknown>
    <Owner><ID>abc</ID><DisplayName>me</DisplayName><Other/></Owner>
    <RestoreStatus><Unknown>1</Unknown></RestoreStatus>
  </Contents>
  <CommonPrefixes><Unknown><Prefix>no</Prefix></Unknown><Prefix>p/</Prefix></CommonPrefixes>
  <Contents2><Key>x</Key></Contents2>
</ListBucketResult>`},
	{"comments-and-attributes", `<?xml version='1.0' encoding='utf-8' standalone="yes"?><!-- before --><!----><ListBucketResult   a = "1"  b='2'><!-- x - y --><Name  attr="&amp;&#x41;]]>" >b</Name ><Contents  ><Key
>k</Key
></Contents></ListBucketResult   >`},
	{"text-in-structures", "<ListBucketResult>junk &amp; text ]]<Contents>more\r\njunk<Key> spaced key </Key>\ttail</Contents>end</ListBucketResult>"},
	{"carriage-returns", "<ListBucketResult><Contents><Key>a\r\nb\rc\n\rd&#13;&#10;e</Key></Contents></ListBucketResult>"},
	{"contents-in-comment", `<ListBucketResult><!-- <Contents> --><Name>b</Name></ListBucketResult>`},
}

// oddDocs are documents the fast parser refuses; the call with the option must still return
// exactly what the SDK returns for them, success or error.
var oddDocs = []struct {
	name string
	doc  string
}{
	{"empty-body", ``},
	{"whitespace-body", " \n"},
	{"truncated", pretty[:len(pretty)/2]},
	{"truncated-in-tag", `<ListBucketResult><Contents><Key>k</Ke`},
	{"mismatched", `<ListBucketResult><Contents><Key>k</Name></Contents></ListBucketResult>`},
	{"mismatched-case", `<ListBucketResult><Name>k</name></ListBucketResult>`},
	{"unknown-entity", `<ListBucketResult><Name>a&nbsp;b</Name></ListBucketResult>`},
	{"entity-no-semicolon", `<ListBucketResult><Name>a&amp b</Name></ListBucketResult>`},
	{"bad-number", `<ListBucketResult><Contents><Size>12a</Size></Contents></ListBucketResult>`},
	{"empty-number", `<ListBucketResult><Contents><Size/></Contents></ListBucketResult>`},
	{"overflow", `<ListBucketResult><Contents><Size>9223372036854775808</Size></Contents></ListBucketResult>`},
	{"bad-bool", `<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>`},
	{"bad-time", `<ListBucketResult><Contents><LastModified>2023-02-29T00:00:00Z</LastModified></Contents></ListBucketResult>`},
	{"wrong-root", `<Other><Name>b</Name><Contents><Key>k</Key></Contents></Other>`},
	{"error-root-200", `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>`},
	{"control-reference", `<ListBucketResult><Contents><Key>a&#x1;b</Key></Contents></ListBucketResult>`},
	{"nul-reference", `<ListBucketResult><Contents><Key>a&#0;b</Key></Contents></ListBucketResult>`},
	{"control-byte", "<ListBucketResult><Contents><Key>a\x01b</Key></Contents></ListBucketResult>"},
	{"nul-byte", "<ListBucketResult><Contents><Key>a\x00b</Key></Contents></ListBucketResult>"},
	{"invalid-utf8", "<ListBucketResult><Contents><Key>a\xffb</Key></Contents></ListBucketResult>"},
	{"fffe", "<ListBucketResult><Contents><Key>a\uFFFEb</Key></Contents></ListBucketResult>"},
	{"reference-beyond-unicode", `<ListBucketResult><Name>&#x110000;</Name></ListBucketResult>`},
	{"cdata-end-in-text", `<ListBucketResult><Name>a]]>b</Name></ListBucketResult>`},
	{"double-dash-comment", `<ListBucketResult><!-- a -- b --><Name>b</Name></ListBucketResult>`},
	{"text-and-cdata", `<ListBucketResult><Name>a<![CDATA[b]]></Name></ListBucketResult>`},
	{"comment-in-value", `<ListBucketResult><Name>a<!-- c -->b</Name></ListBucketResult>`},
	{"child-in-value", `<ListBucketResult><Name><X/></Name></ListBucketResult>`},
	{"doctype", `<!DOCTYPE ListBucketResult><ListBucketResult><Name>b</Name></ListBucketResult>`},
	{"latin1", `<?xml version="1.0" encoding="ISO-8859-1"?><ListBucketResult><Name>b</Name></ListBucketResult>`},
	{"xml-1.1", `<?xml version="1.1"?><ListBucketResult><Name>b</Name></ListBucketResult>`},
	{"spaced-declaration", `<?xml version = "1.0" ?><ListBucketResult><Name>b</Name></ListBucketResult>`},
	{"processing-instruction", `<ListBucketResult><?pi x?><Name>b</Name></ListBucketResult>`},
	{"bom", "\uFEFF<ListBucketResult><Name>b</Name></ListBucketResult>"},
	{"text-before-root", `junk<ListBucketResult><Name>b</Name></ListBucketResult>`},
	{"namespace-prefix", `<s3:ListBucketResult xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><s3:Name>b</s3:Name><s3:Contents><s3:Key>k</s3:Key></s3:Contents></s3:ListBucketResult>`},
	{"kelvin-sign", "<ListBucketResult><Contents><\u212Aey>k</\u212Aey></Contents></ListBucketResult>"},
	{"unquoted-attribute", `<ListBucketResult a=1><Name>b</Name></ListBucketResult>`},
	{"lt-in-attribute", `<ListBucketResult a="<"><Name>b</Name></ListBucketResult>`},
	{"deep-unknown", `<ListBucketResult><U>` + strings.Repeat("<a>", 300) + strings.Repeat("</a>", 300) + `</U><Name>b</Name></ListBucketResult>`},
	{"unclosed-cdata", `<ListBucketResult><Name><![CDATA[abc</Name></ListBucketResult>`},
}

// TestListXMLDifferential checks that every document of docs is decoded by the fast parser,
// and to the same output as the SDK's deserializer produces through a real ListObjectsV2 call.
func TestListXMLDifferential(t *testing.T) {
	srv := newServer(t)
	c := newClient(srv.URL, nil)
	for _, tc := range docs {
		t.Run(tc.name, func(t *testing.T) {
			srv.set(http.StatusOK, []byte(tc.doc), nil)
			direct, err := parsePage([]byte(tc.doc))
			if err != nil {
				t.Fatalf("the fast parser refused the document: %v", err)
			}
			sdk, fast, sdkErr, fastErr := call(t, c)
			if sdkErr != nil {
				t.Fatalf("the SDK refused the document: %v", sdkErr)
			}
			checkSame(t, []byte(tc.doc), sdk, fast, sdkErr, fastErr)
			checkSame(t, []byte(tc.doc), sdk, direct, nil, nil)
		})
	}
}

// TestListXMLForSDK checks that the documents the fast parser hands to the SDK come out of
// the call with the option as the SDK decodes them.
func TestListXMLForSDK(t *testing.T) {
	srv := newServer(t)
	c := newClient(srv.URL, nil)
	for _, tc := range sdkDocs {
		t.Run(tc.name, func(t *testing.T) {
			srv.set(http.StatusOK, []byte(tc.doc), nil)
			if _, err := parsePage([]byte(tc.doc)); err == nil {
				t.Errorf("the fast parser accepted the document")
			}
			sdk, fast, sdkErr, fastErr := call(t, c)
			if sdkErr != nil {
				t.Fatalf("the SDK refused the document: %v", sdkErr)
			}
			checkSame(t, []byte(tc.doc), sdk, fast, sdkErr, fastErr)
		})
	}
}

// TestListXMLMalformed checks that documents the fast parser refuses come out of the call
// with the option exactly as they come out of the SDK.
func TestListXMLMalformed(t *testing.T) {
	srv := newServer(t)
	c := newClient(srv.URL, nil)
	for _, tc := range oddDocs {
		t.Run(tc.name, func(t *testing.T) {
			srv.set(http.StatusOK, []byte(tc.doc), nil)
			if _, err := parsePage([]byte(tc.doc)); err == nil {
				t.Errorf("the fast parser accepted the document")
			}
			sdk, fast, sdkErr, fastErr := call(t, c)
			checkSame(t, []byte(tc.doc), sdk, fast, sdkErr, fastErr)
		})
	}
}

// TestListXMLControlReference pins down why a key with a control character fails: the
// SDK's decoder (encoding/xml) refuses "&#x1;", so the fast parser must refuse it too.
func TestListXMLControlReference(t *testing.T) {
	srv := newServer(t)
	c := newClient(srv.URL, nil)
	srv.set(http.StatusOK, []byte(`<ListBucketResult><Contents><Key>a&#x1;b</Key></Contents></ListBucketResult>`), nil)
	_, _, sdkErr, fastErr := call(t, c)
	var de *smithy.DeserializationError
	if !errors.As(sdkErr, &de) || !strings.Contains(sdkErr.Error(), "illegal character code U+0001") {
		t.Fatalf("SDK error = %v, want encoding/xml's illegal character error", sdkErr)
	}
	if fastErr == nil || fastErr.Error() != sdkErr.Error() {
		t.Fatalf("fast error = %v, want %v", fastErr, sdkErr)
	}
}

// FuzzListXML checks, on mutated documents, that whatever the fast parser accepts it decodes
// as the SDK's deserializer does, and that the fast deserializer middleware then returns
// what the SDK's returns. Documents the parser refuses go to the SDK's own decoder
// (TestListXMLMalformed covers that path), so they are not decoded twice. The fuzzer runs
// the two deserializers on the response directly, not whole calls (which the table tests
// make), so that its time goes to exploring documents.
func FuzzListXML(f *testing.F) {
	for _, d := range docs {
		f.Add([]byte(d.doc))
	}
	for _, d := range oddDocs {
		f.Add([]byte(d.doc))
	}
	for _, d := range sdkDocs {
		f.Add([]byte(d.doc))
	}
	f.Add(pageDoc(3))
	sdkD := sdkDeserializer(f)
	fastD := &fastDeserializer{sdk: sdkD}
	f.Fuzz(func(t *testing.T, doc []byte) {
		direct, err := parsePage(doc)
		if err != nil {
			return
		}
		sdkOut, sdkErr := deserialize(sdkD, doc)
		fastOut, fastErr := deserialize(fastD, doc)
		sdk, fast := pageOrNil(sdkOut), pageOrNil(fastOut)
		checkSame(t, doc, sdk, direct, sdkErr, nil)
		checkSame(t, doc, sdk, fast, sdkErr, fastErr)
	})
}
