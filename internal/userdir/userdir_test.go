package userdir

import "testing"

func TestConfigDirFor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		goos string
		env  map[string]string
		want string
		err  bool
	}{
		{"xdg", "linux", map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/dsh-acp", false},
		{"relative xdg ignored", "linux", map[string]string{"XDG_CONFIG_HOME": "x", "HOME": "/h"}, "/h/.config/dsh-acp", false},
		{"linux home", "linux", map[string]string{"HOME": "/h"}, "/h/.config/dsh-acp", false},
		{"darwin home", "darwin", map[string]string{"HOME": "/h"}, "/h/Library/Application Support/dsh-acp", false},
		{"darwin xdg", "darwin", map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/dsh-acp", false},
		{"nothing", "linux", map[string]string{}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ConfigDirFor(c.goos, func(k string) string { return c.env[k] })
			if (err != nil) != c.err || got != c.want {
				t.Fatalf("ConfigDirFor = %q, %v; want %q (error %v)", got, err, c.want, c.err)
			}
		})
	}
}
