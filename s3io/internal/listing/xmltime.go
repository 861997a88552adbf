package listing

import "time"

// parseS3Time parses S3's 2006-01-02T15:04:05[.fraction]Z, up to nanoseconds, into the Time
// smithy's ParseDateTime returns for it; false for anything else, or a date out of range.
func parseS3Time(v []byte) (time.Time, bool) {
	if len(v) < 20 || len(v) > 30 || v[4] != '-' || v[7] != '-' || v[10] != 'T' || v[13] != ':' || v[16] != ':' || v[len(v)-1] != 'Z' || len(v) > 20 && (v[19] != '.' || len(v) == 21) {
		return time.Time{}, false
	}
	var d [7]int // year, month, day, hour, minute, second, nanoseconds
	for i, at := range [...][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}, {20, len(v) - 1}} {
		for _, c := range v[at[0]:max(at[0], at[1])] {
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
			d[i] = d[i]*10 + int(c-'0')
		}
	}
	for range 29 - len(v) + 1 {
		d[6] *= 10 // the fraction's digits to nanoseconds
	}
	t := time.Date(d[0], time.Month(d[1]), d[2], d[3], d[4], d[5], d[6], time.UTC)
	// time.Date normalizes what is out of range (February 30th, 24:00); time.Parse refuses it.
	if t.Year() != d[0] || int(t.Month()) != d[1] || t.Day() != d[2] || t.Hour() != d[3] || t.Minute() != d[4] || t.Second() != d[5] {
		return time.Time{}, false
	}
	return t, true
}
