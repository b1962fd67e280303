//go:build unix

package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
)

// privateServer is a PostgreSQL cluster of one test's own, which the test
// may restart: a restart of the shared test server would cut off the
// tests of other packages that use it at the same time.
type privateServer struct {
	url      string
	bin, dir string
	cred     *syscall.Credential
}

// startPrivateServer makes and starts a cluster as .ci/postgres does, from
// Debian's package: initdb into a temp dir as the postgres user, pg_ctl
// start on 127.0.0.1 and a free port. It is stopped and removed when the
// test ends. Where that cannot be done it returns why instead.
func startPrivateServer(t *testing.T) (*privateServer, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil, "not root, so the cluster cannot run as the postgres user"
	}
	pgUser, err := user.Lookup("postgres")
	if err != nil {
		return nil, "no postgres user: " + err.Error()
	}
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(bins) == 0 {
		return nil, "no server binaries in /usr/lib/postgresql/*/bin"
	}
	slices.SortFunc(bins, func(a, b string) int { // the newest major version
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	uid, _ := strconv.Atoi(pgUser.Uid)
	gid, _ := strconv.Atoi(pgUser.Gid)
	s := &privateServer{bin: bins[len(bins)-1], cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	// Not t.TempDir: the postgres user must reach it.
	if s.dir, err = os.MkdirTemp("", "lite-pg-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(s.dir) })
	if err := os.Chown(s.dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	s.pg(t, "initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "--no-sync")
	s.pg(t, "pg_ctl", "-D", s.data(), "-l", s.log(), "-w", "-o",
		fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c max_connections=200", port, s.dir), "start")
	t.Cleanup(func() { s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop") })
	s.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return s, ""
}

func (s *privateServer) data() string { return filepath.Join(s.dir, "data") }
func (s *privateServer) log() string  { return filepath.Join(s.dir, "server.log") }

// run runs one of the server's programs as the postgres user. Its output
// goes to a buffer, never to a pipe the server would inherit and hold.
func (s *privateServer) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

func (s *privateServer) pg(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := s.run(name, args...); err != nil {
		t.Fatalf("%s: %v: %s", name, err, out)
	}
}

// restart stops the server, cutting every connection, and starts it
// again with the options it had.
func (s *privateServer) restart() error {
	if out, err := s.run("pg_ctl", "-D", s.data(), "-l", s.log(), "-m", "fast", "-w", "restart"); err != nil {
		return fmt.Errorf("pg_ctl restart: %v: %s", err, out)
	}
	return nil
}
