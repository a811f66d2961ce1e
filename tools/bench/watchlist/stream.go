package watchlist

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// Reading a protobuf watch stream (Accept:
// application/vnd.kubernetes.protobuf;stream=watch) without decoding its
// objects: every frame is a 4-byte big-endian length and a raw
// metav1.WatchEvent message (field 1 the type, field 2 a RawExtension
// whose field 1 is the object in the protobuf envelope). Only bookmarks
// and errors are decoded. The clients share the machine's cores with the
// apiserver, so they should cost it as little as they can.

// maxFrame bounds one event: etcd's request limit is 1.5 MiB, so no object
// is near this.
const maxFrame = 64 << 20

var errFrame = errors.New("watchlist: malformed watch frame")

// frameReader reads the frames of one stream into a reused buffer.
type frameReader struct {
	r   *bufio.Reader
	buf []byte
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// next returns the next frame, valid until the following call; io.EOF at
// the end of the stream.
func (f *frameReader) next() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(f.r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("%w: %d bytes", errFrame, n)
	}
	if cap(f.buf) < int(n) {
		f.buf = make([]byte, n)
	}
	f.buf = f.buf[:n]
	if _, err := io.ReadFull(f.r, f.buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return f.buf, nil
}

// parseEvent returns a WatchEvent message's type and its object's encoded
// bytes (aliasing frame).
func parseEvent(frame []byte) (typ string, object []byte, err error) {
	for len(frame) > 0 {
		num, wt, n := protowire.ConsumeTag(frame)
		if n < 0 {
			return "", nil, errFrame
		}
		frame = frame[n:]
		if wt != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, wt, frame)
			if n < 0 {
				return "", nil, errFrame
			}
			frame = frame[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(frame)
		if n < 0 {
			return "", nil, errFrame
		}
		frame = frame[n:]
		switch num {
		case 1:
			typ = string(v)
		case 2:
			if object, err = rawExtension(v); err != nil {
				return "", nil, err
			}
		}
	}
	if typ == "" {
		return "", nil, fmt.Errorf("%w: no event type", errFrame)
	}
	return typ, object, nil
}

// rawExtension returns field 1 (raw) of a RawExtension message.
func rawExtension(msg []byte) ([]byte, error) {
	for len(msg) > 0 {
		num, wt, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, errFrame
		}
		msg = msg[n:]
		if num == 1 && wt == protowire.BytesType {
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return nil, errFrame
			}
			return v, nil
		}
		n = protowire.ConsumeFieldValue(num, wt, msg)
		if n < 0 {
			return nil, errFrame
		}
		msg = msg[n:]
	}
	return nil, nil
}

// decodeObject decodes an event's object (a bookmark's or an error's).
func decodeObject(raw []byte) (runtime.Object, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("watchlist: decoding event object: %w", err)
	}
	return obj, nil
}

// isInitialEventsEnd reports whether a bookmark's object carries the
// annotation that ends a WatchList's initial events.
func isInitialEventsEnd(raw []byte) (bool, error) {
	obj, err := decodeObject(raw)
	if err != nil {
		return false, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false, fmt.Errorf("watchlist: bookmark object: %w", err)
	}
	return m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true", nil
}

// eventError describes an ERROR event's object (a Status).
func eventError(raw []byte) error {
	obj, err := decodeObject(raw)
	if err != nil {
		return err
	}
	if s, ok := obj.(*metav1.Status); ok {
		return fmt.Errorf("watchlist: watch error event: %d %s: %s", s.Code, s.Reason, s.Message)
	}
	return fmt.Errorf("watchlist: watch error event: %T", obj)
}
