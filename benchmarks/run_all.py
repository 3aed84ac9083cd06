r"""Regenerates every benchmark table, with the peers in the same run, and writes benchmarks/README.md.

  python -m benchmarks.run_all [--original_albert=/path/to/google-research/albert] [--only=data_creation,...]
  python -m benchmarks.run_all --readme_only      # rebuild the pages from benchmarks/results/

Each benchmark is its own module (run one alone to iterate: python -m benchmarks.FAMILY.NAME);
each writes benchmarks/results/NAME.md (and .json), which this script stitches into
benchmarks/README.md with the command that produced it and a one-line conclusion. The
long readings (benchmarks/results/NAME.notes.md, written by hand after a run) go to
docs/benchmark_readings.md. Needs ../shared/data for the real corpus, GLUE and SQuAD; the
learning curve's checkpoint is what the fine-tuning benchmarks start from, so it runs first.
"""

import argparse
import os
import subprocess
import sys

from benchmarks.common import REPO, RESULTS

HERE = os.path.dirname(os.path.abspath(__file__))
READINGS = os.path.join(REPO, "docs", "benchmark_readings.md")

# name, title, command (relative to the repository root), what it shows
BENCHMARKS = [
    ("data_creation", "Pretraining data creation vs the original script",
     "python -m benchmarks.speed.data_creation --original_albert=PATH_TO_GOOGLE_RESEARCH_ALBERT",
     "Instances per second and peak memory (whole process tree) on the 14 MB public-domain corpus, seq 128, "
     "against google-research/albert's create_pretraining_data.py run under TF compat.v1 in the same script; "
     "the last row is a corpus repeated several times: memory does not grow with the corpus."),
    ("data_creation_dask", "Pretraining data on a Dask cluster: the Beam pipeline beside the local tool",
     "python -m benchmarks.speed.data_creation_dask",
     "24 MB, 240 MB and 960 MB of text from the 240 MB corpus of 651 public-domain books "
     "(../shared/data/corpus_large; 960 MB: the corpus four times over as four files), seq 128, dupe factor 5, "
     "Google's 30k-clean vocabulary, through albert_tf's local tool with two worker processes and through the Beam pipeline "
     "on Beam's Dask runner driving a scheduler and two worker processes this script starts on loopback; wall "
     "time, peak memory of every process involved (the cluster's included), output size, and whether the bytes "
     "are the same."),
    ("vocabulary_training", "A 30k vocabulary from the 240 MB corpus: time and memory by sample size",
     "python -m benchmarks.speed.vocabulary_training",
     "albert_tf.train_sentencepiece on the 240 MB corpus of 651 public-domain books (../shared/data/corpus_large, "
     "read gzipped), 30,000 unigram pieces, once per --input_sentence_size: the corpus is streamed to "
     "SentencePiece's trainer, which keeps a uniform sample of that many sentences; 10,000,000 is the original's "
     "spm_train setting. Wall time and peak resident memory of the tool."),
    ("cjk_sentences", "Sentences in Chinese, Japanese and Korean text: the marks present against the sentences found",
     "python -m benchmarks.speed.cjk_sentences",
     "albert_tf.text.sentence_splitter (what --input_format=paragraphs splits with, in the local tool, the Beam "
     "pipeline and the vocabulary tool alike) on the Japanese (Aozora Bunko), Chinese (modern vernacular) and "
     "Korean (UD Kaist) corpora of ../shared/data, against the splitter before its CJK rules (a whitespace and a "
     "Latin capital needed after . ! ?): the runs of sentence-ending marks present, the sentences found, which "
     "marks ended none and why; recall and precision on sentences whose true boundaries are known (the Korean "
     "corpus's lines, and the Chinese Wikipedia sentences of UD GSD, joined into paragraphs of five); the English "
     "corpus as a control; paragraphs split per second."),
    ("learning_curve", "Learning for real: held-out MLM and SOP accuracy",
     "python -m benchmarks.learning.learning_curve",
     "albert_tiny pretrained with the real CLIs on the corpus (every 10th document held out); each checkpoint "
     "evaluated on the held-out documents. Plot: results/learning_curve.png."),
    ("learning_vs_huggingface", "The same learning in Hugging Face's PyTorch ALBERT",
     "python -m benchmarks.learning.learning_vs_huggingface --steps=2000",
     "transformers.AlbertForPreTraining trained on the learning curve's data with the same recipe (the original "
     "LAMB written out in PyTorch, same schedule, clipping and batch) for 2,000 steps; both held-out evaluations "
     "by the same code. Needs the learning curve's work directory."),
    ("pretraining_recipes", "Small-scale pretraining recipes: which one learns from context?",
     "python -m benchmarks.learning.pretraining_recipes --recipes=small_adamw_6k",
     "Each recipe pretrained with the real CLIs on the learning curve's split (every 10th document held out), "
     "resumable for hours in the background; every checkpoint evaluated on the held-out documents. "
     "`--evaluate_only` rebuilds the table from the checkpoints so far; the newest checkpoint of each recipe also "
     "fills 60 cloze sentences drawn from held-out documents (benchmarks/learning/cloze.py). "
     "Plot: results/pretraining_recipes.png."),
    ("dynamic_input", "Dynamic instances: disk, and does the step wait on input?",
     "python -m benchmarks.speed.dynamic_input",
     "The recipes' training text (the 14 MB corpus less every 10th document) as static dupe-10 instances and as "
     "documents (create_pretraining_data --output_format=documents): their size on disk; the documents reader of "
     "run_pretraining alone (instances/s, 1 and 2 input workers); and run_pretraining's own sequences/s on each "
     "input, median of its progress lines after the compiling first loop (the reader's threads share the 2 cores "
     "with the step, so any input cost shows); and how batches mix documents: the documents stream with one "
     "document's instances after another and drawn from 16 documents in turn (run_pretraining's default), each "
     "instance traced to its document, against batches drawn at random from the whole corpus (the static tool's "
     "shuffle). `--parts` measures some of these and keeps the recorded others."),
    ("accelerator_feed", "Would the documents reader keep a GPU fed?",
     "python -m benchmarks.speed.accelerator_feed --corpus=WORK_DIR/train.txt --spm_model_file=WORK_DIR/spm.model",
     "Run on a GPU machine with PyTorch and no TensorFlow: the sequences/s an H200 consumes in a pretraining step of "
     "the same architectures and shapes (Hugging Face's PyTorch ALBERT with albert_tf's presets, MLM at the masked "
     "positions plus SOP, bf16, eager and torch.compile'd), against the instances/s the documents reader's "
     "instance builder makes on that machine's 16-core host, in 1-8 threads (as the reader's input workers run it), "
     "1-16 processes each building its share (the best processes can do) and 1-16 builder processes fed one document "
     "at a time, as run_pretraining --input_processes runs them. WORK_DIR: the recipes' work directory (their training "
     "text and vocabulary); run_all.py leaves this one to be run where such a GPU is."),
    ("from_scratch", "Pretraining from scratch on a 3-hour budget: documents vs static copies vs Hugging Face",
     "python -m benchmarks.learning.from_scratch",
     "albert_small from scratch, each run alone on the machine for the same wall-clock budget, its step count and "
     "decay fitted to its measured step time: albert_tf on documents (new pairs and masks every epoch, instances "
     "drawn from 16 documents in turn; recipe small_adamw_3h_mixed), the same reading one document's instances "
     "after another (small_adamw_3h_dynamic), albert_tf on static dupe-10 instances (small_adamw_3h), and Hugging "
     "Face's from-scratch route (benchmarks.learning.huggingface_from_scratch); all held-out records evaluated "
     "every 500 steps. The runs' commands are in the module's help; this command reads their histories. "
     "Plot: results/from_scratch.png."),
    ("large_corpus", "Pretraining on a corpus 17x larger: the whole path on 2 cores",
     "python -m benchmarks.learning.large_corpus --work_dir=../albert_large",
     "The 240 MB corpus of 651 public-domain books (../shared/data/corpus_large), every 10th document held out: "
     "an 8,000-piece vocabulary from a 1M-sentence sample, the training documents in the documents format through "
     "the local tool and through the Beam pipeline (FnApiRunner, multi-processing; same bytes required), with time, "
     "peak memory and disk; then albert_small on the documents recipe of the 14 MB corpus's 3-hour run "
     "(small_adamw_3h_mixed) at that run's 22,854 fitted steps, evaluated on 6,400 held-out sequences every 500 "
     "steps, set beside the 14 MB run at equal steps; then the transfer grid (SST-2, MRPC, SQuAD v1.1, 3 seeds, "
     "against random init) from its best checkpoint. Resumable: rerun the command. Plot: results/large_corpus.png."),
    ("large_corpus_cased", "The same pretraining, cased: the checkpoint entity tagging starts from",
     "python -m benchmarks.learning.large_corpus --cased --skip_transfer --work_dir=../albert_large_cased",
     "The large-corpus path above with capitals kept (--cased: a cased 8,000-piece vocabulary and cased data, "
     "the same split, recipe, 22,854 steps and held-out evaluation), set beside the 14 MB corpus's recorded run "
     "at equal steps as the lowercased one is (the reading sets it beside the lowercased one); its final "
     "checkpoint is what the own-labels and entity-tagging benchmarks fine-tune. Plot: "
     "results/large_corpus_cased.png."),
    ("paper_experiments", "The paper's experiments at small scale: sharing (Table 4), SOP vs NSP vs none (Table 5), "
     "Figure 2",
     "python -m benchmarks.learning.paper_experiments --variants=all,none,attention,ffn,nsp,mlm_only --downstream",
     "Each variant trained with the pretraining-recipe benchmark's recipe small_adamw_6k (XLA), data, held-out "
     "split, seed and budget (6,000 steps, the recipe's own run reused as the all-shared variant, about 70 minutes "
     "for each of the others alone on a 2-core AVX2 CPU), resumable; evaluated on "
     "held-out SOP and NSP pairs of the same documents; Figure 2 by albert_tf.analyze on the all-shared and "
     "not-shared runs. Curves: results/paper_curves.png."),
    ("transfer", "Transfer: fine-tuning from the 3-hour static recipe's checkpoint vs random init, 3 seeds",
     "python -m benchmarks.downstream.transfer --pretrained=../albert_3h/runs/smallA3hS --seeds=1,2,3 "
     "--random_init_from=benchmarks/results/transfer.json",
     "The checkpoint: `python -m benchmarks.learning.pretraining_recipes --recipes=small_adamw_3h_steps "
     "--work_dir=../albert_3h` (small_adamw_3h's schedule, its 22,168 steps fixed). SST-2 (5,000 training "
     "examples drawn from train.tsv, whole dev set), MRPC (whole train and dev) and SQuAD v1.1 (dev set split by "
     "article) with the real CLIs; mean, standard deviation and range over seeds. --random_init_from takes the "
     "recorded grid's random-init runs, which depend only on the model config, vocabulary, settings and seed "
     "(leave it out to rerun them: about an hour more on 2 cores). Finished runs are reused when rerun."),
    ("train_step", "Training-step throughput vs KerasHub and Hugging Face",
     "python -m benchmarks.speed.train_step --preset=albert_base_v2 --batch_size=8 --seq_length=128 "
     "--skip=huggingface:bf16:noxla",
     "Same architecture and shapes, one optimizer step per training step, each configuration in a fresh process, "
     "interleaved rounds, medians."),
    ("finetune_step", "Fine-tuning step throughput vs KerasHub and Hugging Face",
     "python -m benchmarks.speed.finetune_step --preset=albert_base_v2 --batch_size=32 --seq_length=128 --rounds=2 "
     "--skip=keras_hub:fp32:xla,keras_hub:bf16:xla",
     "SST-2-shaped batches (one sentence of 8 to 60 pieces, padded to 128, two labels) through albert_tf's "
     "fine-tuning trainer, KerasHub's AlbertTextClassifier.fit and Hugging Face's AlbertForSequenceClassification, "
     "same architecture, random weights, one optimizer step per training step, each configuration in a fresh "
     "process, interleaved rounds, medians. albert_tf's step runs every layer on the unpadded positions alone "
     "(albert_tf_padded: the same step over every position, as before), while the FLOPs per sequence count every "
     "position as the peers compute them: albert_tf's achieved GFLOP/s and MFU are the padded step's "
     "equivalent, above 100% where it skips work the peers do."),
    ("train_step_amx", "Training-step throughput on a CPU with AMX (native bf16)",
     "python -m benchmarks.speed.train_step --preset=albert_base_v2 --batch_size=8 --seq_length=128 --rounds=2 --steps=8 "
     "--skip=albert_tf:fp32:xla,albert_tf:bf16:xla,keras_hub:fp32:xla,keras_hub:bf16:xla --results_name=train_step_amx",
     "The same script run on a 16-core Intel Xeon with AMX and AVX512-BF16, where bf16 is native (the development "
     "machine has neither), in three invocations (the reading gives each); run_all.py runs on the development machine "
     "and leaves this one to be run where such a CPU is."),
    ("xla_cpu_dots", "XLA:CPU and bf16 matmuls: which library, which precision",
     "python -m benchmarks.speed.xla_cpu_dots",
     "ALBERT-base's FFN input projection (matmul, bias, GELU) compiled by XLA under each candidate XLA_FLAGS setting, "
     "each in a fresh process: the library XLA:CPU gave the matmul to and the element type the matmul runs in, read "
     "from XLA's optimized HLO, beside the speed with and without XLA. For choosing the flags to try on a CPU with "
     "AMX before timing the whole step there."),
    ("step_overhead", "Small models: the share of the step outside the model",
     "python -m benchmarks.speed.step_overhead --presets=albert_tiny,albert_small --jit_compile",
     "run_pretraining end to end (TFRecords from the built-in corpus, input pipeline, host loop, progress line, "
     "TensorBoard summaries) against the same trainer on one batch held in memory, seq 64, batch 64, each in a "
     "fresh process, interleaved rounds, medians."),
    ("serving_latency", "Serving latency vs KerasHub's exported model",
     "python -m benchmarks.speed.serving_latency",
     "Raw text in, pooled embedding out, all as reloaded SavedModels with in-graph SentencePiece."),
    ("serving_warmup", "Serving: the first request, with and without the export's warm-up records",
     "python -m benchmarks.speed.serving_warmup",
     "An XLA serving export loaded in a fresh process, its first request per shape timed straight after loading "
     "(cold) and after replaying assets.extra/tf_serving_warmup_requests as TF Serving does at load time (warmed)."),
    ("litert", "On a device: LiteRT files beside the SavedModel",
     "python -m benchmarks.speed.litert --pretrained=../albert_large/runs/smallA_large",
     "An SST-2 classifier fine-tuned from albert_tf's own pretrained albert_small, and albert_base_v2's shapes "
     "(random weights, 30k-clean.model): `albert_tf.export`'s SavedModel and `--format=litert` float32, float16, "
     "dynamic-range int8 (the default) and full int8 (calibrated on 1,000 SST-2 training sentences, gated): file "
     "sizes; on the whole SST-2 dev set whether the .tflite's tokenizer gives the Python ids, accuracy, label "
     "agreement with the SavedModel and the largest logit difference; p50/p90 latency of single requests on 1 "
     "thread for texts of about 10, 40 and 128+ tokens."),
    ("cpu_serving",
     "On a CPU server: albert_tf's SavedModel and LiteRT files against ONNX Runtime, fp32, bfloat16 and int8",
     "python -m benchmarks.speed.cpu_serving",
     "albert_base_v2's shapes with random weights (latency does not depend on them), 30k-clean.model, seq 128, as an "
     "encoder (pooled output) and an SST-2-shaped 2-label classifier: albert_tf's serving SavedModel (with and "
     "without --serving_xla, float32 and --serving_precision=bfloat16) and LiteRT float32 and dynamic-range int8 "
     "files (XNNPack; one call per text, and LiteModel(texts, max_batch_tokens=512)) against the same checkpoint "
     "converted by `albert_tf.convert --to=huggingface`, exported by "
     "torch.onnx.export and run by ONNX Runtime in fp32 and after quantize_dynamic (int8 weights), plain and fused "
     "by onnxruntime.transformers.optimizer, each request tokenized by the converted fast tokenizer inside the "
     "timed call as albert_tf's in-graph tokenizer is. Texts of about 10, 40 and 128+ tokens from SST-2 dev and "
     "the corpus, batch 1 and 32, 1 and 2 threads (each in a fresh process), interleaved rounds, p50 and p99; "
     "label agreement and largest logit difference of every int8 and bfloat16 file against its float model, and "
     "albert_tf's float outputs against ONNX Runtime fp32 on the same ids; bfloat16 is compared with ONNX Runtime "
     "fp32, the precision it replaces."),
    ("cpu_serving_amx", "On a CPU server with AMX: the same SavedModel, LiteRT and ONNX Runtime files",
     "python -m benchmarks.speed.cpu_serving --threads=1,2 --calls_batch1=40 --calls_batch32=3 --quality_texts=32 "
     "--results_name=cpu_serving_amx",
     "The cpu_serving script above, run on a 2-core Intel Xeon with AMX (amx_bf16, amx_int8) beside AVX512-BF16, "
     "where TensorFlow's oneDNN runs bfloat16 products on AMX's tile unit: fewer calls per row (40 at batch 1, 3 at "
     "batch 32) and 32 quality texts of each kind, to fit a session. run_all.py leaves it to be run where such a CPU "
     "is."),
    ("cpu_projections", "The products of one request alone: each CPU runtime's kernels on albert_base's projections",
     "python -m benchmarks.speed.cpu_projections",
     "What separates the serving rows above at batch 1: albert_base's four weight products with their biases "
     "(query/key/value joined, attention output, feed-forward in and out), chained over twelve layers of shared "
     "weights on 12, 40 and 128 rows (a text's tokens), with nothing between them. TensorFlow's matmul and bias "
     "add over variables (as the SavedModel runs them; and under XLA), in float32 and with bfloat16 weights and "
     "products (as --serving_precision=bfloat16 runs them), LiteRT's FULLY_CONNECTED in float32 and dynamic-range "
     "int8 (XNNPack), and the same graph in ONNX Runtime (MLAS) in fp32 and after quantize_dynamic, at 1 and 2 "
     "threads (each in a fresh process), interleaved; each output checked against numpy float64."),
    ("cpu_projections_amx", "The products of one request alone, on a CPU with AMX",
     "python -m benchmarks.speed.cpu_projections --results_name=cpu_projections_amx",
     "The cpu_projections script above, run on the 2-core Intel Xeon with AMX of cpu_serving_amx, where oneDNN runs "
     "the bfloat16 products on AMX's tiles. run_all.py leaves it to be run where such a CPU is."),
    ("in_graph_tokenizer", "The in-graph tokenizer: one op against the string ops it replaced",
     "python -m benchmarks.speed.in_graph_tokenizer",
     "2,000 paragraphs of the 14 MB corpus, 30k-clean.model, through TFAlbertTokenizer (tensorflow-text's "
     "FastSentencepieceTokenizer on the model copy whose normalization is ALBERT's preprocessing, then the "
     "`<digit>,` table) and through the tokenizer it replaced (TensorFlow's regex ops, NormalizeUTF8, the "
     "resource-based SentencepieceTokenizer, the `<digit>,` pieces re-encoded with ragged ops), each in a "
     "tf.function, in one batch and one paragraph per call, with the Python AlbertTokenizer as the reference "
     "for ids; interleaved rounds, medians. Then ids with byte offsets (SQuAD serving) on every SQuAD v1.1 dev "
     "context against the ids alone and the Python alignment."),
    ("keras_hub_reads_export", "KerasHub reads albert_tf's Hugging Face export",
     "python -m benchmarks.downstream.keras_hub_reads_export",
     "A random-weight albert_tf model converted with `albert_tf.convert --to=huggingface` and loaded by KerasHub's "
     "`AlbertBackbone.from_preset(<directory>)`: the two encoders' outputs on the same batch (two segments, padding). "
     "This is a supported route from albert_tf to KerasHub."),
    ("finetune_glue", "Does pretraining help? SST-2 and MRPC",
     "python -m benchmarks.downstream.finetune_glue",
     "The learning curve's checkpoint vs the same model from random init, same flags; dev sets split in halves."),
    ("finetune_squad", "Does pretraining help? SQuAD v1.1",
     "python -m benchmarks.downstream.finetune_squad",
     "SQuAD v1.1 dev split by article; the learning curve's checkpoint vs random init; official EM/F1."),
    ("own_labels", "Your own labels: albert_tf's tool beside Hugging Face's run_glue-style training",
     "python -m benchmarks.downstream.own_labels --pretrained=PRETRAINED_CHECKPOINT_DIR --seeds=1,2,3,4,5",
     "A 3-class task with label names made from STS-B (train.tsv and dev.tsv sentence pairs, scores bucketed into "
     "\"low\" < 2, \"mid\" 2 to < 3.5, \"high\" >= 3.5, written as CSV files with columns id, text, text_b, label), "
     "fine-tuned by `albert_tf.run_text_classifier` and, in the same script, by a run_glue-style PyTorch loop over "
     "AlbertForSequenceClassification converted from the same checkpoint with `albert_tf.convert --to=huggingface` "
     "(AdamW with weight decay 0.01 off LayerNorm and biases, linear warmup over 10% of the steps then linear "
     "decay); each from the pretrained checkpoint and from random init (same config and vocabulary), 5 seeds, the "
     "same recipe (epochs, lr, batch, seq, warmup, an evaluation every tenth of the steps) and threads. Both scored "
     "by `albert_tf.tasks.classification_metrics`: accuracy and macro-F1 (mean, std and range over seeds), and the "
     "time per training step. Goals: equal metrics within the seeds' spread; albert_tf's time per step no more "
     "than Hugging Face's."),
    ("tagging", "Entity tagging on Universal NER English-EWT: pretrained, random init and Hugging Face",
     "python -m benchmarks.downstream.tagging --pretrained=../albert_large_cased/runs/smallA_large "
     "--seeds=1,2,3,4,5",
     "PER, LOC and ORG in IOB2 over the English Web Treebank (../shared/data/ner_uner_en_ewt; its train split is not "
     "available offline, so the 2,001 dev sentences train and the 2,077 test sentences evaluate), fine-tuned by "
     "`albert_tf.run_tagger` from the pretrained checkpoint and from random init (same config, vocabulary and "
     "casing), and, in the same script, by a run_glue-style PyTorch loop over AlbertForTokenClassification "
     "converted from the same checkpoint with `albert_tf.convert --to=huggingface` (AdamW with weight decay 0.01 "
     "off LayerNorm and biases, linear warmup over 10% of the steps then linear decay, gradients clipped to 1), "
     "once with torch's AdamW and transformers' schedule (run_glue's) and once with the original's that albert_tf "
     "uses (AdamW without bias correction, epsilon 1e-6, the decay measured from step 0); 5 seeds, the same "
     "recipe (5 epochs, lr 1e-4, batch 32, the checkpoint's sequence length) and threads, each run evaluated once "
     "after its last step. Both implementations get the same windows "
     "(`albert_tf.text.word_pieces`; when this table was made: each word tokenized alone, its tag at its first piece) "
     "and are scored by the same code "
     "(`albert_tf.tasks.tagging_metrics`, conlleval's entity-level F1 per type and overall, token accuracy; mean, "
     "std and range over seeds), with the time per training step. Goals: pretrained beats random init by >= 10 "
     "F1; albert_tf within 1 F1 of Hugging Face from the same weights and optimizer; albert_tf's time per step no "
     "more than Hugging Face's."),
    ("tagging_zh", "Entity tagging on Universal NER Chinese: pretrained on 4.8 MB of Chinese, random init and "
     "Hugging Face",
     "python -m benchmarks.downstream.tagging --pretrained=../cjk_transfer/zh/runs/pretrain "
     "--data_dir=../shared/data/ner_uner_zh_gsdsimp --train_file=zh_gsdsimp-ud-train.iob2 "
     "--dev_file=zh_gsdsimp-ud-dev.iob2 --eval_file=zh_gsdsimp-ud-test.iob2 --epochs=3 --gain_goal=5 "
     "--results_name=tagging_zh --work_dir=../cjk_transfer/zh/tagging --seeds=1,2,3",
     "The checkpoint: albert_small pretrained on ../shared/data/corpus_zh_modern (25 books of modern Chinese, "
     "1.62M characters; every 10th document held out) by `python -m benchmarks.downstream.cjk_transfer "
     "--language=zh --stages=pretrain` (an 8,000-piece vocabulary, documents, seq 128, batch 64, AdamW 5e-4, "
     "4,962 steps, the whole schedule its 1.5-hour budget planned). Fine-tuned on UNER Chinese GSDSimp's "
     "3,997 training sentences (PER, LOC, ORG), each run evaluating the dev split every tenth of its steps and "
     "scoring the test split with the weights best on it: albert_tf's run_tagger from the checkpoint and from "
     "random init, and Hugging Face's AlbertForTokenClassification converted from the same checkpoint, trained on "
     "the same windows (units of each sentence's `# text =` line) with torch's AdamW and with the original's; "
     "3 seeds, 3 epochs, lr 1e-4, batch 32. Entities scored as character spans, as the served model finds them. "
     "Goals: pretrained beats random init by >= 5 F1; albert_tf within 1 F1 of Hugging Face with the same "
     "optimizer; each pretrained run's SavedModel serves its predictions file's entities on every test sentence."),
    ("cmrc2018", "Chinese reading comprehension (CMRC 2018): pretrained on 4.8 MB of Chinese against random init",
     "python -m benchmarks.downstream.cjk_transfer --language=zh --stages=pretrain,cmrc --seeds=1,2,3",
     "The same checkpoint as the UNER Chinese row (4,962 steps, the end of its schedule), and "
     "the same config from random init, each fine-tuned by run_squad on CMRC 2018's trial set (1,002 questions; "
     "the staged data holds no training set) for 2 epochs at the pretraining length (seq 128, stride 64, "
     "questions cut to 32 pieces), predicting the dev set (3,219 questions) and scored by CMRC 2018's own "
     "character-level F1 and EM (`--metric=cmrc2018`)."),
    ("vocabularies_zh", "WordPiece against SentencePiece on Chinese: boundaries, entities, answers, and on a device",
     "python -m benchmarks.downstream.cjk_transfer --language=zh --stages=vocabularies --seeds=1,2,3",
     "Why Google's Chinese ALBERTs tokenize with WordPiece, measured: albert_small pretrained on "
     "../shared/data/corpus_zh_modern with an 8,000-piece SentencePiece model (the CMRC row's checkpoint) and, by "
     "`python -m benchmarks.downstream.cjk_transfer --language=zh --vocabulary=wordpiece --stages=pretrain`, with a "
     "WordPiece vocab.txt trained on the same documents (BERT's layout, lowercased; the trainer stops at 7,219 "
     "lines, Chinese being one character a piece) for the same 4,962 steps of the same recipe. For each vocabulary: "
     "the share of UNER Chinese entity boundaries and CMRC 2018 answer boundaries that fall inside a piece, its "
     "characters per piece, entity F1 on UNER Chinese GSDSimp test (run_tagger, 3 epochs, weights best on dev) "
     "and CMRC 2018 F1/EM (trained on the trial set, as the CMRC row). Then each checkpoint on a device: its LiteRT "
     "files in float32, float16 and dynamic int8 (WordPiece through tensorflow-text's kernels) against its "
     "SavedModel on 500 held-out lines."),
    ("sts_ja", "Japanese sentence similarity (JSTS): pretrained on 5.3 MB of Japanese against random init",
     "python -m benchmarks.downstream.cjk_transfer --language=ja --stages=pretrain,sts --train_steps=4962 "
     "--seeds=1,2,3",
     "albert_small pretrained on ../shared/data/corpus_ja_aozora (122 public-domain works from Aozora Bunko, 1.87M "
     "characters; every 10th document held out) for the Chinese run's 4,962 steps of the same recipe (an "
     "8,000-piece vocabulary with accents kept, the vocabulary tool's default for kana; documents, seq 128, batch "
     "64), and the same config from random init, each fine-tuned by run_text_classifier as a regression "
     "(--problem_type=regression --metric=spearman) on JGLUE's JSTS v1.3 (12,451 training pairs, scores 0-5) for "
     "3 epochs, its valid set (1,457 pairs; the test labels are not public) evaluated every tenth of the steps, "
     "the best Spearman kept and reported."),
    ("sts_ko", "Korean sentence similarity (KorSTS): pretrained on 0.5 MB of Korean against random init",
     "python -m benchmarks.downstream.cjk_transfer --language=ko --stages=pretrain,sts --train_steps=1000 "
     "--seeds=1,2,3",
     "albert_small pretrained on ../shared/data/corpus_ko_ud_kaist (the sentences of UD_Korean-Kaist dev and test: "
     "17 documents, 4,353 sentences, 0.2M characters; every 10th document held out) for 1,000 steps of the same "
     "recipe as the Japanese and Chinese runs (an 8,000-piece vocabulary, documents, seq 128, batch 64: about 80 "
     "passes over its 95k training pieces, where the Chinese run made 34 over its own), and the same config from "
     "random init, each fine-tuned by run_text_classifier as a regression on KorSTS (5,749 machine-translated "
     "training pairs, scores 0-5) for 3 epochs, its human-translated dev set (1,500 pairs) evaluated every tenth "
     "of the steps, the best Spearman kept and reported."),
    ("accents_ja", "Japanese with and without accent stripping: voiced kana and held-out accuracy",
     "python -m benchmarks.downstream.cjk_transfer --language=ja --stages=pretrain --train_steps=1000 "
     "--work_dir=../cjk_transfer_1k && python -m benchmarks.downstream.cjk_transfer --language=ja "
     "--stages=pretrain --train_steps=1000 --accents=strip --work_dir=../cjk_transfer_1k && python -m "
     "benchmarks.downstream.cjk_transfer --language=ja --stages=accents --work_dir=../cjk_transfer_1k",
     "Two albert_small runs on ../shared/data/corpus_ja_aozora, the same split, data recipe and optimizer for "
     "1,000 steps each (documents, seq 128, batch 64), one with an 8,000-piece vocabulary trained with accents "
     "kept (the vocabulary tool's default where stripping would rewrite the text, as here: 6.6% of its "
     "characters) and one with --nokeep_accents (the original's NFKD rule: が becomes か, パ becomes ハ): the "
     "pieces holding a voiced kana, and held-out accuracy at [MASK] beside each vocabulary's frequent-piece "
     "level."),
    ("tagging_units", "Entity tagging by units of the text against tagging words, on English",
     "python -m benchmarks.downstream.tagging_units --baseline=../tagging_baseline --seeds=1,2,3",
     "run_tagger of the checkout before units (`--baseline`, a `git worktree` of commit 1eba7a4: each word tokenized "
     "alone, its tag at its first piece, conlleval on the words) and of this one (each sentence's `# text =` line "
     "tokenized whole, its pieces grouped into units, entities scored as character spans), on Universal NER "
     "English-EWT (dev trains, test is scored after the last step), from the same random initialization: "
     "albert_small over a cased 8,000-piece vocabulary of the English corpus's first 2 MB, 325 steps of batch 32, "
     "seq 64, lr 1e-4; 3 seeds. No pretrained English checkpoint is kept in the repository, so the run any "
     "checkout can repeat is random init. Goal: units no worse than words on English."),
]

# What each table says, in one line (the reading behind it: docs/benchmark_readings.md). Rewritten by hand
# when a rerun changes the answer.
CONCLUSIONS = {
    "data_creation": "albert_tf's data tool is 29.5x the original script with one worker and 45x with two, with "
                     "memory that does not grow with the corpus; the same seed gives the same bytes.",
    "vocabulary_training": "A 30k vocabulary from the 240 MB corpus takes 1.5 minutes and 2.3 GB with a sample of "
                           "1M of its 2.28M sentences, 3.2 minutes and 5.0 GB with all of them (the original's 10M "
                           "cap): memory follows the sample, not the corpus.",
    "cjk_sentences": "Japanese and Chinese paragraphs now give 2.76 and 2.97 sentences each (1.00 before): 99.1% "
                     "and 100.0% of the 。！？ inside a paragraph end a sentence, the rest mostly quotations before a "
                     "quoting particle (「…。」と, 425); Korean and Chinese Wikipedia sentences joined into paragraphs "
                     "are found again at 99.9% and 99.4% recall (3.5% and 0% before), 99.9% and 100.0% precision; "
                     "English splits as before on every paragraph.",
    "data_creation_dask": "On a Dask cluster (a scheduler and two workers) the Beam pipeline writes the local "
                          "tool's bytes at 24, 240 and 960 MB of corpus, its peak memory 1.20x from the smallest "
                          "to the largest (1,063 -> 1,275 MiB, no worker above 499 MiB) and its seconds per MB "
                          "1.44x the local runner's at 960 MB: workers spool units and records to files.",
    "learning_curve": "albert_tiny learns sentence order (held-out SOP 61-62%, 6-7 standard errors above chance) "
                      "but at [MASK] inputs stays at the frequent-piece level at this budget.",
    "learning_vs_huggingface": "Hugging Face's ALBERT trained the same way lands where albert_tf does, within "
                               "noise: the flat [MASK] accuracy is the budget's, not a defect of albert_tf.",
    "pretraining_recipes": "AdamW at albert_small leaves the frequent-piece level after about 3,000 steps and "
                           "reaches 23% at held-out [MASK] by 18,500 (23.5% in a 3-hour budget of 22,168 steps on "
                           "static copies, 22.6-22.8% on documents); LAMB at batch 64 learns more slowly.",
    "dynamic_input": "The documents reader makes about 150x the instances albert_small's step consumes, so the "
                     "step never waits, on 46-49x less disk than static dupe-10 instances; drawing from 16 "
                     "documents in turn keeps a long document from flooding batches (none over half one document, "
                     "against 7% read one document at a time).",
    "accelerator_feed": "An H200 consumes 5,670 albert_base sequences/s at seq 128 and 1,317 at 512 (compiled), "
                        "which two of the reader's threads build 3-5x over; albert_small at batch 1024 consumes "
                        "101,867, 2.6x what any number of threads builds (the GIL holds them under 39,000), while "
                        "16 builder processes (--input_processes) build 79,000-110,000.",
    "from_scratch": "In 3 hours static dupe-10 copies take albert_small to 23.5% at held-out [MASK] (20% at "
                    "1.17 h), documents drawn from 16 in turn to 22.6% (1.44 h), Hugging Face's route to 16.7% "
                    "(15% at 2.33 h, never 20%); albert_tf's runs memorize sentence order (held-out 59-60%, "
                    "training 80-88%) after about 32 passes over the 14 MB corpus: a larger corpus, not a recipe, "
                    "is what the 25% and 70% targets need.",
    "paper_experiments": "At small scale the four sharing variants lie within about one point of each other "
                         "(Table 4); an NSP-trained model cannot do SOP (51.5%), as in the paper's Table 5.",
    "own_labels": "On STS-B pairs as three named classes, albert_tf's own-data tool and a run_glue-style Hugging Face "
                  "loop from the same cased checkpoint end level (accuracy 42.04 against 41.95%, 5 seeds), and from "
                  "random init within the seeds' spread (38.80 against 39.93%, std 1.27), albert_tf at 1.20x "
                  "Hugging Face's steps per second.",
    "tagging": "On UNER English-EWT the cased checkpoint tags entities at 40.7 F1 against 22.4 from random init (5 "
               "seeds); Hugging Face's token classifier from the same weights with the same optimizer ends at 41.7 "
               "(-0.96, within the 1-point goal), with torch's AdamW 5.4 points lower; albert_tf steps 1.83x "
               "faster, computing only the unpadded positions and, in the last layer, the labelled ones.",
    "tagging_zh": "On UNER Chinese a small ALBERT pretrained on 4.8 MB of Chinese tags entities inside "
                  "unsegmented text at 19.94 F1 against 16.57 from random init (+3.37, short of the 5-point goal), "
                  "0.67 below Hugging Face trained from the same weights with the same optimizer (inside the "
                  "1-point goal; the two train step for step alike), and serves the entities it measured on all "
                  "500 test sentences. The 5 points need a corpus of a few hundred MB.",
    "cmrc2018": "On CMRC 2018, trained on its 1,002 trial questions, neither start learns to read: the small "
                "Chinese checkpoint scores 2.95 +- 2.94 F1 (seeds 6.34, 1.12, 1.39) and random init 1.05 +- 0.72; "
                "the gap is within the seeds' spread. Measuring transfer here needs CMRC's training set and a "
                "stronger checkpoint.",
    "sts_ja": "Pretraining on 5.3 MB of Japanese transfers to sentence similarity: JSTS dev Spearman 42.17 +- "
              "8.69 from the checkpoint against 25.89 +- 2.44 from random init (+16.3; every pretrained seed above "
              "every random one), far below published Japanese BERTs (about 80-90), as a 1.9M-character corpus "
              "and 3 epochs predict.",
    "sts_ko": "On 0.2M characters of Korean, albert_small never leaves the frequent-piece level in 1,000 steps "
              "(about 80 passes), and KorSTS shows no transfer: 15.38 +- 2.04 Spearman from the checkpoint against "
              "13.24 +- 5.58 from random init (+2.14, inside the seeds' spread). Measuring it needs more Korean "
              "text, or a vocabulary sized to this one.",
    "accents_ja": "Stripping accents (the original's rule) leaves the Japanese vocabulary no voiced kana (0 of "
                  "8,000 pieces, against 656 kept) and buys no held-out accuracy: 0.0526 at [MASK] against 0.0530 "
                  "with accents kept after 1,000 steps each, both 0.011 above their frequent-piece level, within "
                  "the evaluation's noise (0.0014). Keeping them, the default for kana, costs nothing here.",
    "vocabularies_zh": "At 8,000 pieces SentencePiece is nearly a character a piece on Chinese too: it hides 0.69% "
                       "of entity and 0.56% of answer boundaries inside pieces, WordPiece none. Over 3 seeds the "
                       "two tag entities alike (19.58 against 19.94 F1) and WordPiece answers CMRC 2018 better and "
                       "steadier (6.29 +- 0.85 F1 against 2.95 +- 2.94), where neither learns to read. On a device "
                       "the ids are exact on 500 of 500 lines for both; float32 and float16 keep every line within "
                       "0.999 cosine of the SavedModel, dynamic int8 not quite (min 0.9976 WordPiece, 0.9984 "
                       "SentencePiece): its weights' error, not the vocabulary's.",
    "tagging_units": "Tagging units of the whole text scores English entities 2.35 F1 higher than tagging words "
                     "one by one (20.00 against 17.66 from random init, 3 seeds, stds 0.38 and 0.80): what lets "
                     "Chinese, Japanese and Korean entities begin and end inside a run does not cost English.",
    "transfer": "The 3-hour static recipe's final checkpoint (22,168 steps, 23.1% at held-out [MASK]) gains "
                "+3.3 SQuAD F1 (about 10 standard deviations) over random init and moves neither SST-2 (+0.3) nor "
                "MRPC (-0.6), as its step-8,006 checkpoint (19.3%: +3.1 SQuAD) and the 6,000-step run (16.0%) did: "
                "transfer does not grow with the pretraining this corpus allows.",
    "train_step": "On a Zen 4 EPYC with native bfloat16, albert_tf's pretraining step in bfloat16 (no XLA) is "
                  "1.76x its float32 step, 1.11x KerasHub's best and 1.30x Hugging Face's best (autocast "
                  "bfloat16), at 78% of the bfloat16 matmul peak measured in the same run; in float32 1.12x "
                  "KerasHub's and 1.29x Hugging Face's at 89% of the float32 peak. XLA adds nothing to bfloat16 "
                  "on this CPU.",
    "finetune_step": "albert_tf fine-tunes albert_base on SST-2-shaped rows 3.2x faster than the best peer "
                     "(Hugging Face bf16) and 3.4x KerasHub's best, in bf16 without XLA; in fp32 3.6x Hugging "
                     "Face's. Skipping the padding gives 2.7x over albert_tf's own step computed on every "
                     "position (8.35 against 3.07 sequences/s in fp32, 14.53 against 5.26 in bf16). XLA slows "
                     "every CPU configuration here, so it stays off by default.",
    "train_step_amx": "On a CPU with AMX albert_tf's step is 1.05x KerasHub's in bf16 and 1.02x in fp32 (both "
                      "without XLA, which is slower there for both) and about 5x Hugging Face's.",
    "xla_cpu_dots": "On this CPU every XLA_FLAGS setting still runs the bf16 matmul on upcast fp32 operands, and "
                    "none beats XLA's default fp32 matmul.",
    "step_overhead": "run_pretraining's step spends under 5% outside the model for albert_tiny and "
                     "albert_small: the input pipeline and host loop keep up.",
    "serving_latency": "The XLA serving export with pooled output alone answers 1.37-1.41x faster than "
                       "KerasHub's exported model for full rows, 3-8x for short ones, p99 within 1.35x p50.",
    "serving_warmup": "Without warm-up records the first request of each shape waits 2.3-3.3 s for XLA; after "
                      "TF Serving replays them it costs what later requests do.",
    "large_corpus": "On the 240 MB corpus (1.5 passes) the 14 MB corpus's documents recipe ends at 26.2% at "
                    "held-out [MASK] and 71.5% held-out sentence order, training within 5 points and never "
                    "memorizing, where the 14 MB corpus (36 passes) ends at 22.6% and 59.3%; data creation takes 31 s "
                    "locally, 46 s through Beam with the same bytes. Transfer from it: SST-2 +2.3, SQuAD F1 +3.1 (the goal of "
                    "+5 missed: at seq 64 only 18% of SQuAD's windows hold the answer), MRPC within noise.",
    "large_corpus_cased": "Kept cased, the same run ends level with the lowercased one: 26.0% at held-out [MASK] and "
                          "72.2% held-out sentence order (lowercased 26.2% and 71.5%), within 0.4 points at [MASK] every "
                          "2,000 steps, never memorizing; the local tool and Beam wrote the same bytes.",
    "litert": "On a device, albert_base_v2's default LiteRT file (dynamic-range int8, raw text in) is 12.8 MB and "
              "answers a 40-token text in 23.0 ms on one thread, 3.9x the SavedModel; on SST-2 its tokenizer gives "
              "the Python ids on every dev sentence and it keeps 99.77% of the SavedModel's labels at the same "
              "accuracy; full int8 is refused (98.6% of the labels).",
    "cpu_serving": "On a Zen 4 EPYC with native bfloat16 (AVX512-BF16, no AMX), the bfloat16 SavedModel serves "
                   "1.44-1.70x the fp32 SavedModel at 1 thread with 100% of its labels, 1.34x ONNX Runtime fp32 on "
                   "medium texts at batch 1 (goal 1.2x: met) and 1.58-1.94x at batch 32; it misses 1.0x on short "
                   "texts at batch 1 (0.97-0.98x at 1 thread, 0.54-0.61x at 2) and medium ones at 2 threads "
                   "(0.94-0.95x), where TensorFlow's second thread gains 1.2-1.34x and ONNX Runtime's 1.9x. "
                   "LiteRT int8 stays the fastest file (0.82x ONNX Runtime's best int8 on short texts, 1.06-1.36x "
                   "elsewhere at 1 thread).",
    "cpu_serving_amx": "On a 2-core Xeon with AMX, the bfloat16 SavedModel serves 1.8-2.3x the fp32 SavedModel "
                       "and 1.4-2.6x ONNX Runtime fp32 at batch 32, and 1.36-1.53x ONNX Runtime fp32 on medium "
                       "texts at batch 1 (goal 1.2x: met); short texts at batch 1 fall further behind than on the "
                       "Zen 4 EPYC (0.58-0.74x at 1 thread, 0.35-0.45x at 2): on AMX oneDNN's bfloat16 products "
                       "pay on many rows, not on a short text's dozen (cpu_projections_amx).",
    "cpu_projections": "The 48 weight products of a batch-1 request alone, on a Zen 4 EPYC: TensorFlow's "
                       "bfloat16 products are 1.5-1.7x its float32 ones and 1.12-1.78x ONNX Runtime's float32 "
                       "(MLAS) on 1 thread, but 0.87x on 12 rows at 2 threads; under XLA bfloat16 gains nothing. "
                       "What keeps the bfloat16 SavedModel behind on short texts is mostly the rest of "
                       "TensorFlow's request (3.8 ms at 1 thread, 8.1 at 2, against ONNX Runtime's 0.3-1.4); "
                       "LiteRT's int8 products are 0.67x ONNX Runtime's on 12 rows and level from 40.",
    "cpu_projections_amx": "On AMX, oneDNN's bfloat16 products pay with the row count: 3.0x ONNX Runtime's "
                           "float32 (MLAS) on 128 rows and 1.49x on 40, but 0.61x on a short text's 12 rows (77 "
                           "against 127 GFLOP/s), where on the Zen 4 EPYC they were ahead: on this Xeon the products "
                           "themselves keep short single requests behind.",
    "in_graph_tokenizer": "The one-op tokenizer is 1.93-2.11x the string-op one it replaced on a batch of 2,000 "
                          "paragraphs and 1.37-1.42x on one paragraph per call, with the Python tokenizer's "
                          "ids on every paragraph of the 240 MB corpus (the replaced one: 151 of 833,840 "
                          "differ), so every export uses it; SQuAD serving's ids with byte offsets equal the "
                          "Python alignment on all 2,067 SQuAD dev contexts at 3.1x its speed in a batch.",
    "keras_hub_reads_export": "KerasHub's AlbertBackbone reads albert_tf's Hugging Face export with outputs "
                              "equal to albert_tf's within 2e-6.",
    "finetune_glue": "At albert_tiny scale the learning curve's checkpoint does not beat random init on SST-2 "
                     "or MRPC (differences within the standard errors).",
    "finetune_squad": "At albert_tiny scale both starts stay near zero on SQuAD (EM about 2, F1 about 6.5): "
                      "the benchmark is the place to measure a real checkpoint.",
}

# Measured on a machine their sections name (a CPU with AMX; a GPU's host), which a development machine may not
# be (the command is run there): rebuilt into the README from their results files, never rerun by run_all.
ELSEWHERE = {"train_step_amx", "cpu_serving_amx", "cpu_projections_amx", "accelerator_feed"}

INTRO = """# Benchmarks

Every figure here was produced by the command shown, on one of this project's development machines
(2 CPU cores, no GPU; each table names its CPU and flags: bf16 speed means something only where they
include avx512_bf16 or amx_bf16), with the peers run in the same script. Speed is
reported as ratios against those peers, never asserted in tests. Regenerate everything with
`python -m benchmarks.run_all` (peers' extra requirements: `pip install -r benchmarks/requirements.txt`).
Sections whose results file is missing say so. Each section ends with its conclusion in one line;
the full reading of each run (machine, conditions, what the figures mean) is in
docs/benchmark_readings.md. Paths are the repository's (`benchmarks/results`), the work directory's
beside it (`../shared/data`, a long run's `../albert_large`), or a scratch directory's (`$TMPDIR/...`).

GPU figures for albert_tf's own step (H100 throughput and model-FLOPs utilization for large/xxlarge
at seq 512) are not here: the GPU machine lent to this project has no TensorFlow and only CUDA 13
libraries, while TensorFlow 2.21's GPU wheel and the CUDA 12 libraries it needs are gigabytes, against
64 MiB that can be carried to that machine per call. Its host CPU (16 cores with AMX) did run the CPU
wheel, brought over in pieces, and its GPU ran Hugging Face's PyTorch ALBERT to measure what an
accelerator consumes: the two sections measured there say so.
"""


def readme():
    """benchmarks/README.md (tables, commands, one-line conclusions) and docs/benchmark_readings.md."""
    parts, readings = [INTRO], [READINGS_INTRO]
    for name, title, command, what in BENCHMARKS:
        path = os.path.join(RESULTS, f"{name}.md")
        body = open(path).read().strip() if os.path.exists(path) else "_Not measured yet: run the command._"
        extra = (f"\n\n![{name.replace('_', ' ')}](results/{name}.png)"
                 if name in ("learning_curve", "pretraining_recipes", "from_scratch") and os.path.exists(
                     os.path.join(RESULTS, f"{name}.png")) else "")
        notes_path = os.path.join(RESULTS, f"{name}.notes.md")
        reading = ""
        if os.path.exists(notes_path):
            readings.append(f"## {title}\n\n<a id=\"{name}\"></a>Command: `{command}`\n\n"
                            + open(notes_path).read().strip() + "\n")
            reading = f" The reading: [docs/benchmark_readings.md](../docs/benchmark_readings.md#{name})."
        conclusion = f"\n\n**{CONCLUSIONS[name]}**{reading}"
        parts.append(f"## {title}\n\n{what}\n\n```\n{command}\n```\n\n{body}{extra}{conclusion}\n")
    with open(os.path.join(HERE, "README.md"), "w") as f:
        f.write("\n".join(parts))
    with open(READINGS, "w") as f:
        f.write("\n".join(readings))
    print(f"Wrote {os.path.join(HERE, 'README.md')} and {READINGS}")


READINGS_INTRO = """# Benchmark readings

What each benchmark run showed, read by hand after the run: the machine and its conditions, what the
figures mean, and what was left open. The tables themselves, their commands and one-line conclusions
are in benchmarks/README.md (generated, like this page, by `python -m benchmarks.run_all --readme_only`).
"""


def command_parts(command):
    """The commands a section's command line runs one after another: a benchmark whose stages need separate
    invocations (two pretraining runs, then their comparison) joins them with " && ", as a shell would run them."""
    return command.split(" && ")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--original_albert", help="checkout of google-research/albert for the data benchmark")
    parser.add_argument("--only", default="", help="comma-separated benchmark names (default: all)")
    parser.add_argument("--readme_only", action="store_true",
                        help="only rebuild README.md from benchmarks/results/")
    args = parser.parse_args(argv)
    if not args.readme_only:
        chosen = [b for b in BENCHMARKS if not args.only or b[0] in args.only.split(",")]
        for name, _, command, _ in chosen:
            if name in ELSEWHERE:
                print(f"=== {name}: measured on the machine its section names; run its command there: {command}",
                      flush=True)
                continue
            for part in command_parts(command):
                argv = part.split()[1:]
                if name == "data_creation":
                    argv = [a for a in argv if not a.startswith("--original_albert")]
                    if args.original_albert:
                        argv.append(f"--original_albert={args.original_albert}")
                print(f"=== {name}: python {' '.join(argv)}", flush=True)
                subprocess.run([sys.executable, *argv], check=True, cwd=REPO)
    readme()


if __name__ == "__main__":
    main()
