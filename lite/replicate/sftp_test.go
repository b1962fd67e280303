package replicate_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite/replicate"
	"github.com/matryer/is"
)

// sshd is /usr/sbin/sshd, from Debian's openssh-server.
const sshd = "/usr/sbin/sshd"

// startSFTP starts an SSH server of its own on a free loopback port, with
// a host key and a client key made for it. Without sshd (or root, which sshd needs) it skips,
// and fails under CI=true, which installs it.
func startSFTP(t *testing.T) sftpServer {
	t.Helper()
	_, err := os.Stat(sshd)
	if err == nil && os.Geteuid() != 0 {
		err = fmt.Errorf("sshd needs root")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no SFTP server to test with (apt-get install openssh-server): %v", err)
		}
		t.Skipf("no SFTP server to test with (apt-get install openssh-server): %v", err)
	}
	dir := t.TempDir()
	for _, key := range []string{"host", "client"} {
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, key)).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "client.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	config := fmt.Sprintf(`ListenAddress 127.0.0.1:%d
HostKey %[2]s/host
AuthorizedKeysFile %[2]s/authorized_keys
PidFile %[2]s/sshd.pid
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
Subsystem sftp internal-sftp
`, port, dir)
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // its privilege separation directory
		t.Fatal(err)
	}
	cmd := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd never listened on %s", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return sftpServer{addr: addr, keys: dir}
}

// sftpServer is an SSH server startSFTP started.
type sftpServer struct {
	addr string
	keys string // the directory of its host key and the client's key
}

// url is a new directory on the server, its host key taken from hostKeys.
func (s sftpServer) url(t *testing.T, hostKeys string) string {
	return fmt.Sprintf("sftp://root@%s%s/replica?key=%s/client&host-key=%s/host.pub", s.addr, t.TempDir(), s.keys, hostKeys)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestAReplicaOverSFTPRestoresFenced(t *testing.T) {
	t.Run("a file lost with its WAL comes back from an SFTP server on loopback, fenced", func(t *testing.T) {
		srv := startSFTP(t)
		restoresFenced(t, srv.url(t, srv.keys))
	})
	t.Run("a server whose host key is not the one given gets nothing", func(t *testing.T) {
		is := is.New(t)
		srv, other := startSFTP(t), startSFTP(t)
		path := filepath.Join(t.TempDir(), "q.db")
		q := open(t, path)
		defer q.Close()
		_, err := replicate.Start(path, srv.url(t, other.keys), fast)
		is.True(err != nil) // Start connects, and refuses at once
		is.True(strings.Contains(err.Error(), "host key mismatch"))
	})
}
