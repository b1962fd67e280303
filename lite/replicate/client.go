package replicate

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/benbjohnson/litestream"
	"github.com/benbjohnson/litestream/file"
	"github.com/benbjohnson/litestream/sftp"
)

// errURL says which replica URLs lite takes.
var errURL = errors.New("give file:///path (a directory, such as a NAS mount) or sftp://user@host[:port]/path?key=PRIVATE_KEY_FILE&host-key=HOST_PUBLIC_KEY_FILE")

// newClient makes the Litestream client of a replica URL: file:///dir, or
// sftp://user[:password]@host[:port]/dir with key= (a private key file)
// and host-key= (the server's public key file, as ssh_host_*_key.pub
// holds it: Litestream would otherwise accept any host).
func newClient(raw string) (litestream.ReplicaClient, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("replica URL: %w", errors.Join(errors.Unwrap(err), errURL))
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" || u.Path == "" {
			return nil, fmt.Errorf("replica URL %s: %w", Redact(raw), errURL)
		}
		return file.NewReplicaClient(u.Path), nil
	case "sftp":
		return sftpClient(u)
	}
	return nil, fmt.Errorf("replica URL %s: %w", Redact(raw), errURL)
}

func sftpClient(u *url.URL) (litestream.ReplicaClient, error) {
	q := u.Query()
	switch {
	case u.User.Username() == "" || u.Host == "" || u.Path == "":
		return nil, fmt.Errorf("replica URL %s: %w", Redact(u.String()), errURL)
	case q.Get("host-key") == "":
		return nil, fmt.Errorf("replica URL %s: give host-key=FILE, the server's public key, so that no other host can take the replica", Redact(u.String()))
	}
	hostKey, err := os.ReadFile(q.Get("host-key"))
	if err != nil {
		return nil, fmt.Errorf("replica URL: host key: %w", err)
	}
	c := sftp.NewReplicaClient()
	c.Host = u.Host
	c.User = u.User.Username()
	c.Password, _ = u.User.Password()
	c.Path = u.Path
	c.KeyPath = q.Get("key")
	c.HostKey = string(hostKey)
	return c, nil
}

// writable makes sure that a file replica's directory can be written
// before Litestream starts, so that Start refuses it in one error: a
// file client's Init checks nothing, and Litestream would find out at its
// first sync, in log lines and retries. The directory is made as
// Litestream makes it, with the mode of the database's own. An SFTP
// client connects in Init, which Start runs.
func writable(client litestream.ReplicaClient, dbPath string) error {
	c, ok := client.(*file.ReplicaClient)
	if !ok {
		return nil
	}
	mode := os.FileMode(0o700)
	if info, err := os.Stat(filepath.Dir(dbPath)); err == nil {
		mode = info.Mode().Perm()
	}
	if err := os.MkdirAll(c.Path(), mode); err != nil {
		return err
	}
	probe, err := os.CreateTemp(c.Path(), ".lite-probe-*")
	if err != nil {
		return err
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// CheckURL returns the error Start and Restore would return for a replica
// URL lite cannot replicate to, without connecting.
func CheckURL(raw string) error {
	_, err := newClient(raw)
	return err
}

// Redact is a replica URL without its password, for messages.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a replica URL that does not parse)"
	}
	return u.Redacted()
}
