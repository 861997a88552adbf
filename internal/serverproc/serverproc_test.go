package serverproc

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the server, in the role the environment names.
func TestMain(m *testing.M) {
	switch os.Getenv("SERVERPROC_ROLE") {
	case "":
		os.Exit(m.Run())
	case "serve":
		fmt.Println("serving")
		http.HandleFunc("/health", func(http.ResponseWriter, *http.Request) {})
		http.ListenAndServe("127.0.0.1:"+os.Getenv("SERVERPROC_PORT"), nil)
	case "exit":
		fmt.Println("no drive")
		os.Exit(3)
	case "unready":
		http.ListenAndServe("127.0.0.1:"+os.Getenv("SERVERPROC_PORT"), http.NotFoundHandler())
	}
}

func launch(t *testing.T, role string) (*Process, error) {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "SERVERPROC_ROLE="+role, fmt.Sprintf("SERVERPROC_PORT=%d", port))
	return Launch("test server", cmd, port, t.TempDir(), Ready{Path: "/health", Poll: 10 * time.Millisecond, Timeout: 3 * time.Second})
}

func TestLaunchWaitsUntilReady(t *testing.T) {
	p, err := launch(t, "serve")
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(p.URL + "/health"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /health after Launch: %v %v", resp, err)
	}
	if !strings.Contains(p.Logs(), "serving") {
		t.Errorf("Logs() = %q, want the server's output", p.Logs())
	}
	p.Close()
	p.Close() // twice is fine
	select {
	case <-p.Exited():
	default:
		t.Fatal("Exited not closed after Close")
	}
}

func TestLaunchReportsAServerThatIsNeverReady(t *testing.T) {
	for role, want := range map[string]string{"exit": "exited before it was ready", "unready": "not ready after"} {
		p, err := launch(t, role)
		if err == nil {
			p.Close()
			t.Fatalf("%s: Launch succeeded", role)
		}
		if !strings.Contains(err.Error(), want) || role == "exit" && !strings.Contains(err.Error(), "no drive") {
			t.Errorf("%s: %v, want %q and the server's output", role, err, want)
		}
	}
}
