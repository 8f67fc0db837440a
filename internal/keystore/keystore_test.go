package keystore_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/keystore"
)

// fakeKeychain is a keychain in memory; down makes it fail as a desktop
// without a Secret Service does.
type fakeKeychain struct {
	down bool
	keys map[string]string
}

var errDown = errors.New("no D-Bus session")

func (f *fakeKeychain) Get(endpoint string) (string, error) {
	if f.down {
		return "", errDown
	}
	k, ok := f.keys[endpoint]
	if !ok {
		return "", keystore.ErrNotFound
	}
	return k, nil
}

func (f *fakeKeychain) Set(endpoint, key string) error {
	if f.down {
		return errDown
	}
	f.keys[endpoint] = key
	return nil
}

func (f *fakeKeychain) Delete(endpoint string) error {
	if f.down {
		return errDown
	}
	if _, ok := f.keys[endpoint]; !ok {
		return keystore.ErrNotFound
	}
	delete(f.keys, endpoint)
	return nil
}

func (f *fakeKeychain) Name() string { return "the fake keychain" }

const (
	a = "https://openrouter.ai/api/v1"
	b = "https://api.deepseek.com/v1"
)

// TestKeychainHoldsTheKey: where a keychain answers, the key is kept there
// and the file names only the endpoint.
func TestKeychainHoldsTheKey(t *testing.T) {
	t.Parallel()
	kc := &fakeKeychain{keys: map[string]string{}}
	st := &keystore.Store{Dir: t.TempDir(), Keychain: kc}
	where, err := st.Put(a, "sk-or-v1-secret")
	if err != nil || where != kc.Name() {
		t.Fatalf("Put: %q, %v", where, err)
	}
	file, err := os.ReadFile(st.Path())
	if err != nil || strings.Contains(string(file), "sk-or-v1-secret") || !strings.Contains(string(file), a) {
		t.Errorf("the file: %q, %v", file, err)
	}
	if k, err := st.Get(a); k != "sk-or-v1-secret" || err != nil {
		t.Errorf("Get(a) = %q, %v", k, err)
	}
	if k, err := st.Get(b); k != "" || err != nil {
		t.Errorf("Get(b) = %q, %v; want none", k, err)
	}
	if removed, err := st.Remove(a); !removed || err != nil || len(kc.keys) != 0 {
		t.Errorf("Remove: %v, %v; keychain %v", removed, err, kc.keys)
	}
}

// TestFallBackToTheFile: where the keychain does not answer (no D-Bus
// session, as on a server), the key goes into the 0600 file, per
// endpoint.
func TestFallBackToTheFile(t *testing.T) {
	t.Parallel()
	st := &keystore.Store{Dir: t.TempDir() + "/dsh-acp", Keychain: &fakeKeychain{down: true}}
	where, err := st.Put(a, "sk-a")
	if err != nil || where != st.Path() {
		t.Fatalf("Put: %q, %v; want the file", where, err)
	}
	if _, err := st.Put(b, "sk-b"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(st.Path()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, %v", fi, err)
	}
	if k, _ := st.Get(a); k != "sk-a" {
		t.Errorf("Get(a) = %q", k)
	}
	if k, _ := st.Get(b); k != "sk-b" {
		t.Errorf("Get(b) = %q", k)
	}
	if _, err := st.Put(a, "sk-a2"); err != nil {
		t.Fatal(err)
	}
	if eps, _ := st.Endpoints(); len(eps) != 2 {
		t.Errorf("one key per endpoint: %v", eps)
	}
	if removed, err := st.Remove(a); !removed || err != nil {
		t.Errorf("Remove(a): %v, %v", removed, err)
	}
	if k, _ := st.Get(a); k != "" {
		t.Errorf("a's key after Remove: %q", k)
	}
	if k, _ := st.Get(b); k != "sk-b" {
		t.Errorf("b's key after a's removal: %q", k)
	}
}

// TestBrokenIndex: a file that is not the index is an error naming it,
// never a key.
func TestBrokenIndex(t *testing.T) {
	t.Parallel()
	st := &keystore.Store{Dir: t.TempDir()}
	if err := os.WriteFile(st.Path(), []byte("sk-not-json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := st.Get(a); k != "" || err == nil || !strings.Contains(err.Error(), st.Path()) {
		t.Errorf("Get = %q, %v", k, err)
	}
}
