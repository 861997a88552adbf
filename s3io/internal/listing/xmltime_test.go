package listing

import (
	"fmt"
	"reflect"
	"testing"

	smithytime "github.com/aws/smithy-go/time"
)

// TestListXMLTime checks the direct timestamp parser against smithy's.
func TestListXMLTime(t *testing.T) {
	for _, s := range []string{
		"2024-01-02T03:04:05Z", "2024-01-02T03:04:05.678Z", "2024-01-02T03:04:05.000Z",
		"2024-01-02T03:04:05.1Z", "2024-01-02T03:04:05.123456789Z", "2024-01-02T03:04:05.1234567891Z",
		"2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z",
		"2024-04-31T00:00:00Z", "2024-13-01T00:00:00Z", "2024-00-01T00:00:00Z", "2024-01-00T00:00:00Z",
		"2024-01-01T24:00:00Z", "2024-01-01T23:60:00Z", "2024-01-01T23:59:60Z", "2024-01-01T00:00:00.Z",
		"2024-01-01T00:00:00,5Z", "2024-01-01T00:00:00.5+01:00", "2024-01-01T00:00:00", "0000-01-01T00:00:00Z",
		"9999-12-31T23:59:59.999999999Z", "2024-01-01t00:00:00z", "2024-1-01T00:00:00Z", "+024-01-01T00:00:00Z",
		"2024-01-01T00:00:00.-1Z", "2024-01-01T00:00:00.1a2Z", "", "Z",
	} {
		want, wantErr := smithytime.ParseDateTime(s)
		got, err := parseTime([]byte(s))
		if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) && wantErr == nil {
			t.Errorf("parseTime(%q) = %v, %v; want %v, %v", s, got, err, want, wantErr)
		}
	}
}

// TestListXMLTimeCalendar checks the direct timestamp parser on every day (and invalid
// day) of years around the calendar's edge cases.
func TestListXMLTimeCalendar(t *testing.T) {
	for _, year := range []int{0, 1, 4, 100, 399, 400, 1600, 1899, 1900, 1969, 1970, 1999, 2000, 2023, 2024, 2100, 9999} {
		for month := 0; month <= 13; month++ {
			for day := 0; day <= 32; day++ {
				s := fmt.Sprintf("%04d-%02d-%02dT23:59:58.5Z", year, month, day)
				want, wantErr := smithytime.ParseDateTime(s)
				got, err := parseTime([]byte(s))
				if (err != nil) != (wantErr != nil) || wantErr == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("parseTime(%q) = %v, %v; want %v, %v", s, got, err, want, wantErr)
				}
			}
		}
	}
}

// FuzzFastListTime checks the direct timestamp parser against smithy's on any string.
func FuzzFastListTime(f *testing.F) {
	f.Add("2024-01-02T03:04:05.678Z")
	f.Add("2024-02-29T23:59:59Z")
	f.Add("0000-03-01T00:00:00.123456789Z")
	f.Add("1600-02-29T00:00:00Z")
	f.Fuzz(func(t *testing.T, s string) {
		want, wantErr := smithytime.ParseDateTime(s)
		got, err := parseTime([]byte(s))
		if (err != nil) != (wantErr != nil) || wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("parseTime(%q) = %v, %v; want %v, %v", s, got, err, want, wantErr)
		}
	})
}
