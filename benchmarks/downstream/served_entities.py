r"""Are the served entities the ones a tagger's run measured? Exports a run_tagger model directory as a SavedModel
(raw text in, entities with character offsets out), serves every text of the run's predictions file through it,
and compares each sentence's entities (type, start, end) with the file's.

  python -m benchmarks.downstream.served_entities --model=OUT/best \
      --predictions=OUT/predictions.entities.jsonl --export_dir=OUT/served [--result=OUT/served.json]

The tagging benchmark runs it on each albert_tf run from the pretrained checkpoint (its best model and the test
split's predictions), in a process of its own, since the benchmark's own process runs PyTorch. Prints and writes
(--result) a JSON object: sentences, sentences whose served entities equal the file's, entities in the file, and
the first differing sentences.
"""

import argparse
import json
import os
import shutil
import sys

SERVING_NAME = "ner"
BATCH_SIZE = 64
DIFFERENCES_SHOWN = 5


def entity_spans(entities):
    return [(entity["type"], entity["start"], entity["end"]) for entity in entities]


def compare(rows, served):
    """{sentences, equal, entities, differences}: the file's rows ({"text", "entities"}) against the served
    entities of each row's text, in order."""
    differences = [{"where": row.get("where"), "text": row["text"], "file": entity_spans(row["entities"]),
                    "served": entity_spans(entities)}
                   for row, entities in zip(rows, served) if entity_spans(row["entities"]) != entity_spans(entities)]
    return {"sentences": len(rows), "equal": len(rows) - len(differences),
            "entities": sum(len(row["entities"]) for row in rows), "differences": differences[:DIFFERENCES_SHOWN]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a run_tagger model directory (OUTPUT_DIR/best)")
    parser.add_argument("--predictions", required=True,
                        help="the run's entities file (OUTPUT_DIR/predictions.entities.jsonl), made by that model")
    parser.add_argument("--export_dir", required=True, help="where the SavedModel is written (replaced)")
    parser.add_argument("--result", default=None, help="also write the JSON result to this file")
    args = parser.parse_args(argv)
    for path in (args.model, args.predictions):
        if not os.path.exists(path):
            sys.exit(f"{path}: missing")
    with open(args.predictions, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]

    from albert_tf import load_export
    from albert_tf.export_lib.exporter import export

    shutil.rmtree(args.export_dir, ignore_errors=True)
    export(args.model, args.export_dir, serving_name=SERVING_NAME, serving_max_batch_size=BATCH_SIZE)
    served_model = load_export(args.export_dir)
    served = []
    for begin in range(0, len(rows), BATCH_SIZE):
        served.extend(served_model([row["text"] for row in rows[begin:begin + BATCH_SIZE]]))
    result = compare(rows, served)
    print(json.dumps(result, ensure_ascii=False))
    if args.result:
        with open(args.result, "w", encoding="utf-8") as f:
            json.dump(result, f, ensure_ascii=False, indent=1)
    return result


if __name__ == "__main__":
    main()
