package s3io

import "testing"

// TestConfigMatchErrors: a glob that does not compile fails validation with an error that
// names Config.Match, quotes the pattern and says where the problem is.
func TestConfigMatchErrors(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		{"logs/[a-", `s3io: Config.Match "logs/[a-" is not a valid glob: unterminated character class at offset 5`},
		{"x\\", `s3io: Config.Match "x\\" is not a valid glob: trailing \ at offset 1 escapes nothing; write \\ to match a backslash`},
	} {
		err := Config{Bucket: "logs", Match: tc.pattern}.Validate()
		if err == nil || err.Error() != tc.want {
			t.Errorf("Validate with Match %q = %v, want %q", tc.pattern, err, tc.want)
		}
	}
}
