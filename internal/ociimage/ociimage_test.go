package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// testImage is an image of two layers: a tree read from disk (a file, a link, a sticky
// directory) and entries given in the description, one of them owned by another user.
func testImage(t *testing.T, gz bool) Image {
	t.Helper()
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "bin", "tool"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.Symlink("tool", filepath.Join(root, "bin", "alias")))
	must(t, os.Mkdir(filepath.Join(root, "tmp"), 0o755))
	must(t, os.Chmod(filepath.Join(root, "tmp"), fs.ModeSticky|0o777))
	tree, err := Dir(root)
	must(t, err)
	return Image{
		Name: "localhost/ociimage/test:1",
		Layers: []Layer{tree, {
			{Path: "var/lib/app", Mode: fs.ModeDir | 0o700, UID: 65532, GID: 65532},
			{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0::/root:/sbin/nologin\n")},
			{Path: "etc", Mode: fs.ModeDir | 0o755},
		}},
		Gzip:         gz,
		Entrypoint:   []string{"/bin/tool"},
		Cmd:          []string{"serve"},
		Env:          []string{"PATH=/bin"},
		User:         "65532:65532",
		ExposedPorts: []string{"3000/tcp"},
		Labels:       map[string]string{"org.opencontainers.image.version": "1"},
	}
}

// TestWrite reads back the layout Write writes, compressed or not: an index naming the
// image, blobs that match their digests, a configuration with the image's settings and the
// layers' diff ids, and layers holding the entries in order of their paths, owned as the
// description says (root unless told), permissions and links kept, no time and no owner's
// name. Writing twice gives the same bytes.
func TestWrite(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(map[bool]string{false: "uncompressed", true: "gzip"}[gz], func(t *testing.T) {
			img := testImage(t, gz)
			dst := filepath.Join(t.TempDir(), "image.tar")
			desc, err := Write(dst, img)
			must(t, err)
			c, err := Read(dst)
			must(t, err)

			if c.Digest != desc.Digest || desc.MediaType != ocispec.MediaTypeImageManifest {
				t.Errorf("Write returned %+v, the index names %s", desc, c.Digest)
			}
			named := c.Index.Manifests[0]
			if named.Annotations["io.containerd.image.name"] != img.Name || named.Annotations[ocispec.AnnotationRefName] != img.Name {
				t.Errorf("index annotations: %v", named.Annotations)
			}
			if named.Platform == nil || named.Platform.OS != "linux" || named.Platform.Architecture != runtime.GOARCH {
				t.Errorf("index platform: %+v", named.Platform)
			}
			want := ocispec.ImageConfig{
				User: img.User, ExposedPorts: map[string]struct{}{"3000/tcp": {}}, Env: img.Env,
				Entrypoint: img.Entrypoint, Cmd: img.Cmd, Labels: img.Labels,
			}
			if !reflect.DeepEqual(c.Config.Config, want) || c.Config.OS != "linux" || c.Config.Architecture != runtime.GOARCH || c.Config.Created != nil {
				t.Errorf("config: %+v", c.Config)
			}
			wantType := map[bool]string{false: ocispec.MediaTypeImageLayer, true: ocispec.MediaTypeImageLayerGzip}[gz]
			for i, l := range c.Manifest.Layers {
				if l.MediaType != wantType {
					t.Errorf("layer %d: media type %s, want %s", i, l.MediaType, wantType)
				}
			}

			type entry struct {
				path     string
				mode     fs.FileMode
				uid, gid int
				link     string
				data     string
			}
			entries := func(l Layer) []entry {
				var out []entry
				for _, e := range l {
					out = append(out, entry{e.Path, e.Mode, e.UID, e.GID, e.Link, string(e.Data)})
				}
				return out
			}
			wantLayers := [][]entry{{
				{"bin", fs.ModeDir | 0o755, 0, 0, "", ""},
				{"bin/alias", fs.ModeSymlink | 0o777, 0, 0, "tool", ""},
				{"bin/tool", 0o755, 0, 0, "", "#!/bin/sh\n"},
				{"tmp", fs.ModeDir | fs.ModeSticky | 0o777, 0, 0, "", ""},
			}, {
				{"etc", fs.ModeDir | 0o755, 0, 0, "", ""},
				{"etc/passwd", 0o644, 0, 0, "", "root:x:0:0::/root:/sbin/nologin\n"},
				{"var/lib/app", fs.ModeDir | 0o700, 65532, 65532, "", ""},
			}}
			if len(c.Layers) != len(wantLayers) {
				t.Fatalf("%d layers, want %d", len(c.Layers), len(wantLayers))
			}
			for i := range wantLayers {
				if got := entries(c.Layers[i]); !reflect.DeepEqual(got, wantLayers[i]) {
					t.Errorf("layer %d:\n got %+v\nwant %+v", i, got, wantLayers[i])
				}
				for _, hdr := range layerHeaders(t, c, i) {
					if !hdr.ModTime.Equal(epoch) || hdr.Uname != "" || hdr.Gname != "" || !hdr.AccessTime.IsZero() || !hdr.ChangeTime.IsZero() {
						t.Errorf("layer %d: %s carries a time or an owner's name: %v %q %q", i, hdr.Name, hdr.ModTime, hdr.Uname, hdr.Gname)
					}
				}
			}

			again := filepath.Join(t.TempDir(), "again.tar")
			if _, err := Write(again, img); err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(dst)
			b, _ := os.ReadFile(again)
			if !bytes.Equal(a, b) {
				t.Fatal("writing the same image twice gave different tarballs")
			}
		})
	}
}

// TestWriteDigestFollowsContents: the digest changes with a file's contents, its mode or its
// owner, and with the image's settings; not with the image's name, which is the index's.
func TestWriteDigestFollowsContents(t *testing.T) {
	base := testImage(t, true)
	digestOf := func(img Image) digest.Digest {
		t.Helper()
		d, err := Write(filepath.Join(t.TempDir(), "image.tar"), img)
		must(t, err)
		return d.Digest
	}
	want := digestOf(base)
	renamed := base
	renamed.Name = "localhost/ociimage/other:2"
	if got := digestOf(renamed); got != want {
		t.Errorf("renaming the image changed its digest")
	}
	for name, change := range map[string]func(img *Image){
		"contents": func(img *Image) { img.Layers[1][1].Data = []byte("root:x:0:0::/:/sbin/nologin\n") },
		"mode":     func(img *Image) { img.Layers[1][1].Mode = 0o600 },
		"owner":    func(img *Image) { img.Layers[1][1].UID = 1 },
		"user":     func(img *Image) { img.User = "0:0" },
		"cmd":      func(img *Image) { img.Cmd = nil },
	} {
		img := testImage(t, true)
		change(&img)
		if digestOf(img) == want {
			t.Errorf("a change of %s kept the digest", name)
		}
	}
}

// TestWriteRefuses: a path that is not clean and relative, or given twice, and an entry
// that is neither a file, a directory nor a link, leave no tarball.
func TestWriteRefuses(t *testing.T) {
	for name, l := range map[string]Layer{
		"absolute": {{Path: "/etc", Mode: fs.ModeDir | 0o755}},
		"unclean":  {{Path: "etc/../etc", Mode: fs.ModeDir | 0o755}},
		"outside":  {{Path: "../etc", Mode: fs.ModeDir | 0o755}},
		"twice":    {{Path: "a", Data: []byte("1")}, {Path: "a", Data: []byte("2")}},
		"device":   {{Path: "dev/null", Mode: fs.ModeDevice | 0o666}},
		"no link":  {{Path: "a", Mode: fs.ModeSymlink | 0o777}},
	} {
		dst := filepath.Join(t.TempDir(), "image.tar")
		if _, err := Write(dst, Image{Name: "x", Layers: []Layer{l}}); err == nil {
			t.Errorf("%s: written", name)
		}
		if _, err := os.Stat(dst); err == nil {
			t.Errorf("%s: a tarball was left", name)
		}
	}
}

// TestTar: a tar stream's files, directories and links become entries with their modes and
// owners; other entries are refused.
func TestTar(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "./usr/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "usr/bin/su", Typeflag: tar.TypeReg, Mode: 0o4755, Size: 2, Uid: 0},
		{Name: "home/u/", Typeflag: tar.TypeDir, Mode: 0o750, Uid: 1000, Gid: 1000},
		{Name: "bin", Typeflag: tar.TypeSymlink, Linkname: "usr/bin", Mode: 0o777},
	} {
		must(t, tw.WriteHeader(h))
		if h.Size > 0 {
			_, err := tw.Write([]byte("su"))
			must(t, err)
		}
	}
	must(t, tw.Close())
	l, err := Tar(&buf)
	must(t, err)
	want := Layer{
		{Path: "usr", Mode: fs.ModeDir | 0o755},
		{Path: "usr/bin/su", Mode: fs.ModeSetuid | 0o755, Data: []byte("su")},
		{Path: "home/u", Mode: fs.ModeDir | 0o750, UID: 1000, GID: 1000},
		{Path: "bin", Mode: fs.ModeSymlink | 0o777, Link: "usr/bin"},
	}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("got %+v\nwant %+v", l, want)
	}

	buf.Reset()
	tw = tar.NewWriter(&buf)
	must(t, tw.WriteHeader(&tar.Header{Name: "dev/null", Typeflag: tar.TypeChar, Mode: 0o666}))
	must(t, tw.Close())
	if _, err := Tar(&buf); err == nil || !strings.Contains(err.Error(), "dev/null") {
		t.Errorf("a device: %v", err)
	}
}

// layerHeaders reads the tar headers of layer i as stored.
func layerHeaders(t *testing.T, c *Contents, i int) []*tar.Header {
	t.Helper()
	d := c.Manifest.Layers[i]
	var r io.Reader = bytes.NewReader(c.Blobs[d.Digest])
	if d.MediaType == ocispec.MediaTypeImageLayerGzip {
		zr, err := gzip.NewReader(r)
		must(t, err)
		r = zr
	}
	var out []*tar.Header
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		must(t, err)
		out = append(out, hdr)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
