//go:build !linux

package testutil

import "os"

// exchange swaps the entries a and b, through a third name: not at once
// (macOS's renamex_np(RENAME_SWAP) is not in x/sys), so the attack is
// weaker there.
func exchange(a, b string) error {
	tmp := a + ".swap-tmp"
	if err := os.Rename(a, tmp); err != nil {
		return err
	}
	if err := os.Rename(b, a); err != nil {
		return err
	}
	return os.Rename(tmp, b)
}
