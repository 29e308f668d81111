package ring

// The ring's 8-byte words outside the records (format.go): the tail slot
// in the reader's memory (WriteTwice), and the head write-back that lands
// in the writer's DelayedHead word. Each is a little-endian uint64 that
// the peer writes one-sidedly; these accessors are the only code that
// reads or writes them, so the byte order lives here with the format.

// WordSize is the size of the tail slot and of the DelayedHead word.
const WordSize = 8

// PutTail stores the writer's Tail into dst[:8], the registered buffer the
// tail write (WriteTwice) is posted from.
func (w *Writer) PutTail(dst []byte) { le.PutUint64(dst[:WordSize], w.tail) }

// ResetHeadWord stores DelayedHead into word[:8], the writer's DelayedHead
// word, before a (re)connected reader starts writing Head back into it:
// ApplyHeadWord then sees only values the reader wrote since.
func (w *Writer) ResetHeadWord(word []byte) { le.PutUint64(word[:WordSize], w.dhead) }

// ApplyHeadWord reads the DelayedHead word the reader writes its Head
// back into and applies a new value (OnHeadUpdate). It reports whether
// DelayedHead moved; a bad value is ErrProtocol and changes nothing.
func (w *Writer) ApplyHeadWord(word []byte) (bool, error) {
	h := le.Uint64(word[:WordSize])
	if h == w.dhead {
		return false, nil
	}
	if err := w.OnHeadUpdate(h); err != nil {
		return false, err
	}
	return true, nil
}

// PutHead stores Head into dst[:8], the registered buffer a head
// write-back is posted from.
func (r *Reader) PutHead(dst []byte) { le.PutUint64(dst[:WordSize], r.head) }

// ResetTailSlot stores the received position into slot[:8], the reader's
// tail slot (WriteTwice), after NewReader or Resync and before the writer
// resumes: the slot then names nothing new until the writer's next tail
// write.
func (r *Reader) ResetTailSlot(slot []byte) { le.PutUint64(slot[:WordSize], r.recv) }

// ReadTailSlot reads the tail slot and parses the records up to it
// (OnTail), appending them to dst.
func (r *Reader) ReadTailSlot(slot []byte, dst []Record) ([]Record, error) {
	return r.OnTail(le.Uint64(slot[:WordSize]), dst)
}
