"""Texts like the requests a model will get, read from a user's file (--calibration_file): full int8 LiteRT
files calibrate on them and measure their gate, and a bfloat16 serving model's gate measures on them."""

from albert_tf.settings import SettingError


MIN_CALIBRATION_TEXTS = 200


def read_calibration_texts(path, pairs, minimum=MIN_CALIBRATION_TEXTS, purpose="full int8 needs"):
    """[(text, text_b)] from a UTF-8 file of one request per line ("text<TAB>text_b" for sentence pairs); SettingError
    naming the file and line for a line that is not text (undecodable, or holding a NUL: a binary file), and for fewer
    than `minimum` distinct requests (copies measure nothing new; `purpose` says who needs them)."""
    requests = []
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as error:
                raise SettingError(f"<calibration_file>={path}: line {number} is not UTF-8 text ({error.reason} at "
                                   f"byte {error.start}); give texts like the requests, one per line") from None
            if "\0" in line:
                raise SettingError(f"<calibration_file>={path}: line {number} holds a NUL character (a binary file?); "
                                   "give texts like the requests, one per line")
            if not line.strip():
                continue
            text, _, text_b = line.partition("\t") if pairs else (line, "", "")
            requests.append((text, text_b))
    distinct = len(set(requests))
    if distinct < minimum:
        copies = f" ({len(requests) - distinct} more are copies)" if distinct < len(requests) else ""
        raise SettingError(f"<calibration_file>={path}: {distinct} distinct texts{copies}; {purpose} at least "
                           f"{minimum} to measure its accuracy gate on")
    return requests
