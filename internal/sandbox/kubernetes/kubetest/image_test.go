package kubetest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestWriteImage reads back the layout WriteImage writes: an index naming the image, blobs
// that match their digests, a config whose layer digest is the layer's, and a layer holding
// the tree with root as owner, permissions and links kept. Writing twice gives the same
// bytes.
func TestWriteImage(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "bin", "tool"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.Symlink("tool", filepath.Join(root, "bin", "alias")))
	must(t, os.Mkdir(filepath.Join(root, "tmp"), 0o755))
	must(t, os.Chmod(filepath.Join(root, "tmp"), os.ModeSticky|0o777))
	img := Image{Name: "localhost/kubetest/test:1", Root: root, Entrypoint: []string{"/bin/tool"}, Env: []string{"PATH=/bin"}}

	dst := filepath.Join(t.TempDir(), "image.tar")
	must(t, WriteImage(dst, img))
	files := readTar(t, dst)

	var index ocispec.Index
	must(t, json.Unmarshal(files["index.json"], &index))
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != img.Name {
		t.Fatalf("index: %+v", index)
	}
	blob := func(d ocispec.Descriptor) []byte {
		t.Helper()
		b, ok := files[blobPath(d)]
		if !ok || digest.FromBytes(b) != d.Digest || int64(len(b)) != d.Size {
			t.Fatalf("blob %s missing or not matching its descriptor", d.Digest)
		}
		return b
	}
	var manifest ocispec.Manifest
	must(t, json.Unmarshal(blob(index.Manifests[0]), &manifest))
	var config ocispec.Image
	must(t, json.Unmarshal(blob(manifest.Config), &config))
	if len(manifest.Layers) != 1 || !reflect.DeepEqual(config.RootFS.DiffIDs, []digest.Digest{manifest.Layers[0].Digest}) {
		t.Fatalf("manifest layers %+v, config rootfs %+v", manifest.Layers, config.RootFS)
	}
	if !reflect.DeepEqual(config.Config.Entrypoint, img.Entrypoint) || !reflect.DeepEqual(config.Config.Env, img.Env) || config.OS != "linux" {
		t.Fatalf("config: %+v", config)
	}

	type entry struct {
		typ  byte
		mode int64
		link string
		body string
	}
	want := map[string]entry{
		"bin/":      {tar.TypeDir, 0o755, "", ""},
		"bin/alias": {tar.TypeSymlink, 0o777, "tool", ""},
		"bin/tool":  {tar.TypeReg, 0o755, "", "#!/bin/sh\n"},
		"tmp/":      {tar.TypeDir, 0o1777, "", ""},
	}
	got := map[string]entry{}
	tr := tar.NewReader(bytes.NewReader(blob(manifest.Layers[0])))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		if hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.ModTime.Unix() != 0 {
			t.Errorf("%s: owner %d:%d %q, time %v: want root and no time", hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.ModTime)
		}
		body, _ := io.ReadAll(tr)
		got[hdr.Name] = entry{hdr.Typeflag, hdr.Mode, hdr.Linkname, string(body)}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("layer:\n got %+v\nwant %+v", got, want)
	}

	again := filepath.Join(t.TempDir(), "again.tar")
	must(t, WriteImage(again, img))
	a, _ := os.ReadFile(dst)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Fatal("writing the same tree twice gave different tarballs")
	}
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		must(t, err)
		files[hdr.Name], err = io.ReadAll(tr)
		must(t, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
