"""The intent detector's vocabulary (data): the patterns that find quotes, money, dates, numbers
and names, the word sets that tell a statement from a request, identifier strings, the tiers'
bounds and targets, and the filler a lexical query drops. Every regex is linear-time."""

from __future__ import annotations

import re

# straight, curly and single quotes; guillemets (« », ‹ ›: French), „ “ (German) and the corner
# brackets 「 」『 』 (Chinese, Japanese)
QUOTED = re.compile(
    r'"([^"]{1,300})"|“([^”]{1,300})”|‘([^’]{1,300})’|(?<![\w\'’])\'(?=\S)([^\n]{1,300}?)(?<=\S)\'(?![\w\'’])'
    r"|«\s?([^»]{1,300}?)\s?»|‹\s?([^›]{1,300}?)\s?›|„([^“”]{1,300})[“”]|「([^」]{1,300})」|『([^』]{1,300})』"
)
MONEY = re.compile(
    r"[$€£¥]\s?\d[\d,.]*\s?(?:k|m|bn|million|billion)?\b|\b\d[\d,.]*\s?(?:%|percent\b|dollars\b|euros\b|usd\b)", re.I
)
# a numeric date is a valid day and month either way round (3/14, 14/3, 12/25/2025); a ratio or a
# split (60/40, 50/50) and "24/7" are not dates
DATE = re.compile(
    r"\b(?:\d{4}-\d{2}-\d{2}|(?!24/7\b)(?:(?:0?[1-9]|1[0-2])/(?:0?[1-9]|[12]\d|3[01])|(?:0?[1-9]|[12]\d|3[01])/(?:0?[1-9]|1[0-2]))(?!\d)(?:/\d{2,4})?|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?(?:,? \d{4})?|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*(?:,? \d{4})?)\b",
    re.I,
)
RELATIVE_DATE = re.compile(
    r"\b(?:(?:in|on|since|during|last|this|next|early|late) (?:january|february|march|april|may|june|july|august|"
    r"september|october|november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"the \d{1,2}(?:st|nd|rd|th)|yesterday|last (?:week|night|month|year))\b",
    re.I,
)
# a value (12 weeks, 5-6 years, 100g), not a digit inside a name: IL-6, HIV-1, 4-PBA, F4/80, 5'-UTR
NUMBER = re.compile(
    r"(?<![\w'’/])(?<![^\W\d_]-)\d+(?:[.,]\d+)?(?:st|nd|rd|th|am|pm|k|g|kg|mg|ml|km|cm|mm|h|hrs?|mins?|s|x)?"
    r"(?![\w'’/]|-[^\W\d_])"
)
POSSESSIVE_NAME = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][^\W\d_]{1,30})['’]s\b")
NAME_AFTER_PREP = re.compile(r"\b(?:with|from|by|for) ([A-Z][^\W\d_]{1,30})\b")
ENTITY = re.compile(r"\b(?:[A-Z][^\W\d_]{1,30}|[A-Z]{2,6}\d{0,3}|[A-Z]\d{1,3})\b")
WORD = re.compile(r"[\w$€£%'’-]+")
# what may stand right before a sentence's first word: its capital says nothing of a name there
SENTENCE_OPENERS = '.?!:;"“(¿¡«„「『'
# German function words English does not share (no "die", "was", "am", "in"): two of them and a
# capitalised word is a noun, not a name
GERMAN_WORDS = frozenset(
    "der das den dem des und ist nicht wir ich mir mich mein meine meinen meiner hat haben wann wer "
    "welche welchen welcher für mit sind wenn auf ein eine einen bei auch noch gibt wo wie über "
    "unser unsere unseren ab bis vom zum zur beim".split()
)

# English function words, and those of the other languages the multilingual set holds that
# English does not share ("a", "as", "in", "an", "on", "was", "die", "mia" left out of both): which ones a
# question holds more of says in which of them it is written (``reads_as_english``)
ENGLISH_WORDS = frozenset(
    "what when where who whom whose why how which is are was were do does did my the me to of for "
    "about with have has had that this it and or you we our your their they there been will would "
    "should could can".split()
)
OTHER_WORDS = GERMAN_WORDS | frozenset(
    "qué que quién quien cuándo cuando dónde donde cómo como cuál cuánto cuánta el la los las del mi "
    "mis es está son un una y por para con se lo le les "  # Spanish
    "quel quelle quels quelles qui quoi quand où comment est sont je tu il elle nous vous ils mon ma "
    "mes ton ta le des du au aux et pour avec dans sur ce cette ai-je "  # French
    "qual quais quem quando onde como é são meu minha os do da dos das em um uma e para com "  # Portuguese
    "chi cosa quando dove come è sono il lo gli mio di del della e per con".split()  # Italian
)

ABSTRACT_NOUNS = frozenset(
    [
        "fairness",
        "justice",
        "trust",
        "leadership",
        "culture",
        "growth",
        "creativity",
        "happiness",
        "meaning",
        "purpose",
        "motivation",
        "productivity",
        "success",
        "failure",
        "ambition",
        "identity",
        "values",
        "ethics",
        "freedom",
        "balance",
        "relationships",
        "partnership",
        "partnerships",
        "collaboration",
        "teamwork",
        "community",
        "innovation",
        "strategy",
        "vision",
        "philosophy",
        "learning",
        "wisdom",
        "resilience",
        "change",
        "love",
        "friendship",
        "honesty",
        "integrity",
        "equality",
        "power",
        "responsibility",
        "mindset",
        "habits",
        "wellbeing",
        "well-being",
        "courage",
        "fear",
        "risk",
        "ownership",
        "autonomy",
        "mentorship",
        "management",
        "entrepreneurship",
    ]
)

STATEMENT_OPENERS = frozenset(
    """find show get give list look search pull tell remind recall what what's whats which who whom whose when
    where why how did do does is are was were can could would will should shall have has had any anything
    everything something explore help please let let's brainstorm summarize summarise recap compare
    quote grep copy repeat verbatim exact exactly literally""".split()
)
# Imperative request verbs: "Explain my rationale for ...", "Map out everything that touches on
# trust.", "Recite the comment ..." end with a full stop but ask for something. Many of them are
# nouns too ("Total revenue grew.", "Group meetings moved to Tuesday."), so the verb counts only
# before a word that an imperative takes (``IMPERATIVE_NEXT``: "me", "my", "out", "the", ...), and
# only in lower or title case (a sentence opening with "MAP" or "CHOP" names a gene).
REQUEST_VERBS = frozenset(
    """explain describe recite read reread surprise map trace walk outline connect collect gather dig bring
    fetch locate identify sketch draw reflect contrast track highlight point surface resurface suggest
    check name count scan skim review revisit replay play display print open jump take send share dredge
    unearth retrieve lookup cite paraphrase reconstruct spot flag group cluster organize organise sort rank
    link relate match assemble compile synthesize synthesise distill distil break go run pick select grab
    dump extract isolate piece tie weave lay spell catch fill refresh jog zoom narrow broaden widen
    tally total sum chart plot visualize visualise string""".split()
)
IMPERATIVE_NEXT = frozenset(
    """me us my our your his her their its the a an this that these those every each all any anything
    everything something some what how why where when which who whatever out up back through down over
    together across around""".split()
)
# "I need the exact wording of ...", "Looking for ...": a request phrased as a sentence
REQUEST_LEAD = re.compile(
    r"^\W*(?:i(?:'d| would)? (?:need|want|like)|i(?:'m| am) (?:looking|trying|searching)|(?:looking|searching) for|"
    r"need|want)\b",
    re.IGNORECASE,
)
CLOSERS = "\"'”’)]»"
# a sentence that ends in a request for what it described: 'The line that starts "Most people ..."
# - find it.', '... in a standup; locate that line.' (a verb before "it", "that", "me", ...; "The
# plan is simple: get funding." stays a statement)
REQUEST_TAIL = re.compile(
    r"(?:[;:—–]|\s-)\s*(?:please\s+|can you\s+|could you\s+)?(?:find|locate|show|get|pull|give|tell|remind|search|look|"
    r"dig|bring|fetch|quote|recite|read)\s+(?:it|that|this|them|those|these|me|where)\b[^;:—–]{0,40}$",
    re.IGNORECASE,
)
# words that report speech or writing just before a quote: 'Tom said "ship it"', 'the line "..."',
# 'Dad: "proud of you"'; a quote after anything else in a statement is emphasis or a coined term
# ('cells generate "Van Gogh" bundles', 'we call it the "friday freeze"')
REPORTED_SPEECH = re.compile(
    r"(?:\b(?:say|says|said|saying|write|writes|wrote|written|type|typed|text|texted|tell|tells|told|reply|replied|"
    r"answer|answered|ask|asked|mention|mentioned|message|messaged|email|emailed|post|posted|tweet|tweeted|"
    r"shout|shouted|yell|yelled|whisper|whispered|goes|went|read|reads|word|words|phrase|term|line|sentence|"
    r"quote|quoted|like)\b(?:\s+[\w'’]+){0,2}|:)[\s,]*$",
    re.IGNORECASE,
)


# cues that ask for something only in a request: "the note containing ...", "anything related to ...",
# "specifically the email ..." ask for words or breadth; in a statement they are ordinary words of
# its content ("cells containing the mutation divide", "X is linked to Y", "tissue-specific damage")
REQUEST_ONLY = frozenset({"containing_words", "related_to", "similar_to", "specifically"})


CODE = re.compile(
    r"(?<![\w#])#[^\W\d_][\w-]{0,60}|\b[A-Za-z][A-Za-z0-9]{0,30}_[A-Za-z0-9_]{0,60}|\b[A-Z]{2,8}-\d{3,12}(?:-\d{1,12})?\b"
)
TRACKING = re.compile(r"\b[A-Za-z0-9]{8,40}\b")
# the words a search for a string may hold beside it: "search my notes for #lowstock", "INC-4471
# mentions", "Find the message with ERR_CERT_DATE_INVALID in it"
CODE_SEARCH_WORDS = frozenset(
    """find search grep look lookup locate show get pull for up my me the a an in on of at all every any
    note notes message messages email emails chat chats doc docs file files log logs mention mentions
    mentioning mentioned with containing contains contain string where it that this tagged tag tags
    and or i wrote used hit hits occurrence occurrences entry entries""".split()
)


LEAD_FILLER = re.compile(
    r"^(?:\s*(?:find|show|show me|tell me|get|give me|search|search for|look for|look up|pull up|recall|remind me|"
    r"what|what's|where|can you|could you|please|the|that|a|an|all|my|me|about|of|on|for|to|in|and|or|was|is|did|do|"
    # the request's own verb of saying ("what exactly did I say about ..."): not words to find
    r"(?:i|we|you) (?:say|said|mention|mentioned|write|wrote|tell|told|type|typed|note|noted|put))\b[\s,.:;?!]*)+",
    re.I,
)
