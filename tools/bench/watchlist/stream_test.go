package watchlist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// encodeStream encodes events as kube-apiserver does for Accept:
// application/vnd.kubernetes.protobuf;stream=watch: the objects with the
// protobuf serializer, each event with the raw stream serializer, framed
// by the length-delimited framer.
func encodeStream(t *testing.T, events ...metav1.WatchEvent) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok || info.StreamSerializer == nil {
		t.Fatal("no protobuf stream serializer")
	}
	var buf bytes.Buffer
	fw := info.StreamSerializer.NewFrameWriter(&buf)
	for _, ev := range events {
		var frame bytes.Buffer
		if err := info.StreamSerializer.Encode(&ev, &frame); err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(frame.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func event(t *testing.T, typ string, obj runtime.Object) metav1.WatchEvent {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	enc := scheme.Codecs.EncoderForVersion(info.Serializer, v1.SchemeGroupVersion)
	raw, err := runtime.Encode(enc, obj)
	if err != nil {
		t.Fatal(err)
	}
	return metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw}}
}

func TestReadWatchStream(t *testing.T) {
	cm := func(name string) *v1.ConfigMap {
		return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string]string{"v": strings.Repeat("x", 100)}}
	}
	bookmark := func(end bool) *v1.ConfigMap {
		c := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42"}}
		if end {
			c.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
		}
		return c
	}
	stream := encodeStream(t,
		event(t, "ADDED", cm("a")),
		event(t, "BOOKMARK", bookmark(false)),
		event(t, "ADDED", cm("b")),
		event(t, "BOOKMARK", bookmark(true)),
		event(t, "ERROR", &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"}),
	)
	fr := newFrameReader(bytes.NewReader(stream))
	var got []string
	for {
		frame, err := fr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		typ, obj, err := parseEvent(frame)
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case "BOOKMARK":
			end, err := isInitialEventsEnd(obj)
			if err != nil {
				t.Fatal(err)
			}
			if end {
				typ += "(end)"
			}
		case "ERROR":
			err := eventError(obj)
			if err == nil || !strings.Contains(err.Error(), "410 Expired: too old") {
				t.Errorf("error event: %v", err)
			}
		case "ADDED":
			o, err := decodeObject(obj)
			if err != nil {
				t.Fatal(err)
			}
			typ += "(" + o.(*v1.ConfigMap).Name + ")"
		}
		got = append(got, typ)
	}
	want := "ADDED(a) BOOKMARK ADDED(b) BOOKMARK(end) ERROR"
	if strings.Join(got, " ") != want {
		t.Fatalf("events %q, want %q", strings.Join(got, " "), want)
	}
}

func TestMalformedFrames(t *testing.T) {
	huge := binary.BigEndian.AppendUint32(nil, maxFrame+1)
	if _, err := newFrameReader(bytes.NewReader(huge)).next(); !errors.Is(err, errFrame) {
		t.Errorf("oversized frame: %v", err)
	}
	short := append(binary.BigEndian.AppendUint32(nil, 10), 1, 2, 3)
	if _, err := newFrameReader(bytes.NewReader(short)).next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut frame: %v", err)
	}
	for name, frame := range map[string][]byte{
		"no type":       {},
		"bad tag":       {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"cut bytes":     {0x0a, 0x05, 'A'},
		"cut extension": {0x0a, 0x01, 'A', 0x12, 0x03, 0x0a, 0x09, 0x00},
	} {
		if _, _, err := parseEvent(frame); !errors.Is(err, errFrame) {
			t.Errorf("%s: %v, want errFrame", name, err)
		}
	}
}
