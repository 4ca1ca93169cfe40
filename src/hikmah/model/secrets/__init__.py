"""The credential detector: refuse to persist secrets, withhold them in previews.

Every field a writer controls passes through :func:`check_fields` before a
write, and ledger reports show previews through :func:`redact`. This is a
guard against secrets that merely appeared in a conversation, not a DLP
system: it knows well-known credential shapes, ``NAME=value`` assignments and
passwords named in a sentence, on a command line or in XML.

A text holds a secret when one of these matches, each described where it is
found:

* a well-known shape, a vendor's prefix, a credential file or a connection
  string (:mod:`.shapes`, their checks in :mod:`.checks`);
* a password on a command line (:mod:`.commands`);
* a credential passed to a call (:mod:`.calls`);
* a password named in prose (:mod:`.prose`);
* an assignment to a credential's name (:mod:`.assignments`), unless its value
  or its context says it is none (:mod:`.values`, :mod:`.context`);
* a name built around a credential word, a credential flag, an XML element or
  a named token (:mod:`.named`), whose value must look random
  (:mod:`.randomness`).

Detection (:mod:`.detector`) runs only the scans whose needles the text holds
(:mod:`.needles`), over the text as written and a normalised copy
(:mod:`.normalise`); :mod:`.redaction` withholds what it finds, and
:mod:`.fields` refuses a write and remembers the texts found clear.

Every pattern runs in linear time: quantifiers are bounded or possessive, no
quantified group can match the same text two ways, and each unbounded token
pattern starts with a lookbehind that excludes its own alphabet, so a run of
token characters is scanned from its first character only. The lazy gaps
(the context before a password or a named token, the text between a Twilio
SID and its token) are bounded, so each candidate costs a constant. Where a
shape needs context that a pattern would reach by a long gap (the HTTP client
before a ``-u``, mysql before a ``-p``), the pattern finds the short part and a
check looks back at most 200 characters; likewise at most 600 characters of the
URL around an Azure ``sig=``, 60 before a Heroku or Cloudflare value and 40 of a
name before its keyword. A ``NAME = value`` candidate is any name (scanned from
its first character, its lookbehind excluding its alphabet) whose lowercase form
contains a credential word's letters; its words are judged in Python. A scan
that skips a rejected candidate resumes inside it, never before its start.
"""

from hikmah.model.secrets.detector import find_secret
from hikmah.model.secrets.fields import check_fields, unvouch, vouch
from hikmah.model.secrets.redaction import preview, redact

__all__ = ["check_fields", "find_secret", "preview", "redact", "unvouch", "vouch"]
