package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

const hostsFile = "/etc/hosts"

// hasHostsEntry reports whether the hosts file maps host to 127.0.0.1.
func hasHostsEntry(path, host string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "127.0.0.1" {
			continue
		}
		for _, name := range fields[1:] {
			if strings.EqualFold(name, host) {
				return true, nil
			}
		}
	}
	return false, sc.Err()
}

// ensureHostsEntry makes host resolve to 127.0.0.1 through the hosts file. Beam's S3
// filesystem cannot be told to use path-style addressing, so it reaches the bucket as
// BUCKET.DOMAIN:PORT, a name nothing else resolves. The line is appended only when missing
// and only when add is true; it reports whether it added one.
func ensureHostsEntry(path, host string, add bool) (added bool, err error) {
	ok, err := hasHostsEntry(path, host)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if ok {
		return false, nil
	}
	if !add {
		return false, fmt.Errorf("%s has no line \"127.0.0.1 %s\" and --add-hosts-entry=false: textio cannot reach the bucket", path, host)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return false, fmt.Errorf("add \"127.0.0.1 %s\" to %s (run as root, add it yourself, or leave textio out): %w", host, path, err)
	}
	defer f.Close()
	data, _ := os.ReadFile(path)
	sep := ""
	if len(data) > 0 && data[len(data)-1] != '\n' {
		sep = "\n"
	}
	if _, err := fmt.Fprintf(f, "%s127.0.0.1 %s # added by s3io-bench for Beam's virtual-hosted S3 requests\n", sep, host); err != nil {
		return false, fmt.Errorf("append to %s: %w", path, err)
	}
	return true, f.Close()
}
