"""py_undo_history: a small document editor's undo history, written the way
such code often is: every edit snapshots the whole document with a JSON round
trip (json.loads(json.dumps(...))) so that undo can restore it. Most of the
time goes to that round trip, inside the standard library's json (Python and
its C accelerator), called from History.record.

    python3 py_undo_history.py [CPU_SECONDS]

Runs edits for about CPU_SECONDS of CPU time (default 2; CPU time, so a busy
machine gets the same work sampled) and prints how many edits it made."""
import json
import random
import sys
import time


class Document:
    def __init__(self, n_blocks):
        self.title = "Quarterly plan"
        self.blocks = [
            {"id": i, "kind": "heading" if i % 10 == 0 else "paragraph",
             "text": "Revenue grew in every region but one. " * 3,
             "marks": [[k, k + 4, "bold"] for k in range(0, 40, 8)]}
            for i in range(n_blocks)
        ]

    def as_dict(self):
        return {"title": self.title, "blocks": self.blocks}


class History:
    def __init__(self, limit):
        self.limit = limit
        self.snapshots = []

    def record(self, doc):
        # A deep copy of the document, so that later edits do not change it.
        snapshot = json.loads(json.dumps(doc.as_dict()))
        self.snapshots.append(snapshot)
        if len(self.snapshots) > self.limit:
            del self.snapshots[0]

    def undo(self, doc):
        if self.snapshots:
            last = self.snapshots.pop()
            doc.title, doc.blocks = last["title"], last["blocks"]


def apply_edit(doc, rng):
    block = doc.blocks[rng.randrange(len(doc.blocks))]
    words = block["text"].split(" ")
    rng.shuffle(words)
    block["text"] = " ".join(words)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    rng = random.Random(3)
    doc = Document(120)
    history = History(limit=40)
    edits = 0
    end = time.process_time() + seconds
    while True:
        apply_edit(doc, rng)
        history.record(doc)
        edits += 1
        if edits % 25 == 0:
            history.undo(doc)
            if time.process_time() >= end:
                break
    print(f"{edits} edits")


if __name__ == "__main__":
    main()
