import pytest

from brain_search.errors import InvalidInput
from brain_search.models import Focus, Intent
from brain_search.retrieval.intent import analyze, extract_phrases, intent_for_z, is_bare_code, is_statement
from brain_search.retrieval.question.presets import apply_overrides
from brain_search.retrieval.zscale import FOCUS_PRESETS

# Spec section 2: the Z-range table.
SPEC_Z_TABLE = [
    ("Find where I said '53% equity'", Intent.exact),
    ("The conversation about Jacob's CTO offer", Intent.precise),
    ("What did we discuss about compensation?", Intent.balanced),
    ("My thinking on fairness in partnerships", Intent.conceptual),
    ("Ideas related to building teams", Intent.broad),
]

# Spec 5.2: natural-language Z targeting.
SPEC_NL_TABLE = [
    ("Find exactly where I said the launch date was moved", 0.1),
    ("What was that conversation about the office lease", 0.3),
    ("What do I think about remote work", 0.6),
    ("Ideas similar to the referral program", 0.8),
    ("Explore everything related to hiring", 0.9),
]


@pytest.mark.parametrize(("query", "intent"), SPEC_Z_TABLE)
def test_spec_z_range_table(query: str, intent: Intent) -> None:
    assert analyze(query).detected_intent == intent


@pytest.mark.parametrize(("query", "z"), SPEC_NL_TABLE)
def test_spec_natural_language_table(query: str, z: float) -> None:
    assert analyze(query).target_z == pytest.approx(z, abs=0.05)


def test_no_cue_is_balanced_like_the_spec() -> None:
    qi = analyze("compensation")
    assert (qi.detected_intent, qi.target_z, qi.z_tolerance, qi.confidence) == (Intent.balanced, 0.5, 0.3, 0.5)


@pytest.mark.parametrize(
    "query",
    ['find "53% equity"', "find “53% equity”", "find ‘53% equity’", "find '53% equity'"],
)
def test_quoted_phrases_in_any_quotes(query: str) -> None:
    qi = analyze(query)
    assert qi.phrases == ("53% equity",)
    assert qi.detected_intent == Intent.exact
    assert "quoted_phrase" in qi.cues


def test_apostrophes_are_not_quotes() -> None:
    assert extract_phrases("what's Jacob's take on it, don't you think") == []


@pytest.mark.parametrize(
    ("query", "cue"),
    [
        ("show me the message word for word", "word_for_word"),
        ("specifically the budget numbers", "specifically"),
        ("find the conversation where Maria mentioned Lisbon", "find_conversation_where"),
        ("quote me the pricing line", "quote"),
        ("how much did we pay, $4,500 or so", "money_or_percent"),
        ("the call on March 3rd", "date"),
        ("lunch with Jacob last week", "proper_noun_with_modifier"),
        ("I keep thinking about burnout", "thinking_about"),
        ("ideas on onboarding", "ideas_related"),
        ("explore my notes", "explore"),
        ("stuff related to fundraising", "related_to"),
        ("something similar to our pricing page", "similar_to"),
        ("recurring themes in my journal", "themes"),
        ("patterns in how I plan weeks", "patterns"),
        ("how do I work generally", "generally"),
        ("overall, what matters to me", "generally"),
        ("what I believe about fairness", "abstract_noun"),
    ],
)
def test_appendix_a_cues_fire(query: str, cue: str) -> None:
    assert cue in analyze(query).cues


def test_specific_cue_consumes_its_span() -> None:
    # "what do I think about" counts once, not also as the broader "think about"
    assert analyze("What do I think about remote work").cues == ("what_do_i_think",)


def test_lexical_query_strips_cue_words_keeps_phrases() -> None:
    assert analyze("Find where I said '53% equity'").lexical_query == "53% equity"
    assert analyze("Find exactly where I said the launch date moved").lexical_query == "launch date moved"
    assert analyze("Ideas related to building teams").lexical_query == "building teams"
    assert analyze("What did we discuss about compensation?").lexical_query == "compensation"


def test_length_limit_is_a_clear_error() -> None:
    with pytest.raises(InvalidInput, match="longer than"):
        analyze("x" * 2001)
    with pytest.raises(InvalidInput):
        analyze("   ")


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "evil",
    [
        "where " * 330,
        "'" + "a" * 1998 + "'",
        '"' * 2000,
        "find the " * 222,
        ("a " * 999)[:2000],
        "1," * 1000,
    ],
)
def test_pathological_inputs_finish(evil: str) -> None:
    analyze(evil[:2000])


def test_intent_for_z_boundaries() -> None:
    assert [intent_for_z(z) for z in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)] == [
        Intent.exact,
        Intent.precise,
        Intent.balanced,
        Intent.conceptual,
        Intent.broad,
        Intent.broad,
    ]


def test_z_value_overrides_focus() -> None:
    qi = analyze("Ideas related to building teams")
    out, source = apply_overrides(qi, Focus.exact, 0.42)
    assert (out.target_z, out.z_tolerance, out.confidence, source) == (0.42, 0.15, 1.0, "z_value")
    out, source = apply_overrides(qi, Focus.exact, None)
    assert (out.target_z, out.detected_intent, source) == (FOCUS_PRESETS[Focus.exact].target, Intent.exact, "focus")
    out, source = apply_overrides(qi, Focus.auto, None)
    assert out is qi and source == "auto"


@pytest.mark.parametrize(
    "query",
    [
        "IL-6 signaling plays a major role in atherosclerotic cardiovascular disease.",
        "Sarah moved to Lisbon in 2019.",
        "Cells containing the mutation divide faster.",
        "BiP is a general endoplasmic reticulum stress marker.",
        "RANK-RANKL signalling is linked to development of thymic epithelial cells.",
        "Ribosomopathies have a high degree of tissue specific pathology.",
        "The number of cortical precursors rises after ablation.",
    ],
)
def test_a_plain_statement_is_balanced(query: str) -> None:
    """Names, numbers and content words of a statement are its topic, not a request."""
    qi = analyze(query)
    assert qi.detected_intent is Intent.balanced
    assert qi.target_z == 0.5


@pytest.mark.parametrize(
    "query",
    [
        'Tom said "ship it" on Friday.',
        'Dad texted me "proud of you kid" after the game.',
        'The sign read "no parking after 6".',
        'Kim: "let\'s push to Monday".',
        '"we ship when it\'s boring."',
        "I need the exact wording of my resignation email.",
        "Anna copied the contract word for word.",
    ],
)
def test_a_statement_keeps_explicit_requests_for_the_words(query: str) -> None:
    assert analyze(query).detected_intent is Intent.exact


@pytest.mark.parametrize(
    "query",
    [
        'Mouse models can be generated using "artificial spermatids."',
        'Surfactin producing cells cooperate to generate "Van Gogh" bundles on specialized media.',
        "miRNAs enforce homeostasis by suppressing low-level ''leaky'' transcription.",
        'The team calls it the "friday freeze" before releases.',
    ],
)
def test_quotes_in_a_statement_are_emphasis(query: str) -> None:
    """Scare quotes and coined terms in a claim ask for nothing; the words still count as phrases."""
    qi = analyze(query)
    assert qi.detected_intent is Intent.balanced
    assert "quoted_phrase" not in qi.cues
    assert qi.phrases


@pytest.mark.parametrize(
    "query",
    [
        '"artificial spermatids"',
        'quote "artificial spermatids"',
        'Find where I said "artificial spermatids"',
        "Find where I said “artificial spermatids”",
        'what was going on when "artificial spermatids" came up?',
        'Mouse models can be generated using "artificial spermatids"?',
    ],
)
def test_a_quote_in_a_request_or_question_stays_exact(query: str) -> None:
    assert analyze(query).detected_intent is Intent.exact


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        ("We noticed a pattern of late invoices from the same client.", Intent.balanced),
        ("My sister thinks the move was a good idea.", Intent.balanced),
        ("Termination events are dictated by initiation patterns.", Intent.balanced),
        ("patterns in late invoices", Intent.broad),
        ("was the move a good idea?", Intent.conceptual),
    ],
)
def test_cue_words_inside_a_statement_are_its_content(query: str, intent: Intent) -> None:
    assert analyze(query).detected_intent is intent


@pytest.mark.parametrize(
    "query",
    [
        "Explain my rationale for charging per seat instead of per usage.",
        "Surprise me with old notes that relate to what I'm building now.",
        "Map out everything that touches on trust, across work and family.",
        "Recite the comment Coach Ellis wrote on my deadlift form check, unedited.",
        "Walk me through the hiring plan.",
    ],
)
def test_an_imperative_ending_in_a_full_stop_is_a_request_not_a_statement(query: str) -> None:
    assert not is_statement(query)


@pytest.mark.parametrize(
    "query",
    [
        'The line in my book notes that starts "Most people overestimate what they can do" - find it.',
        'I remember saying "hire slow, fire never" in a standup; locate that line.',
    ],
)
def test_a_sentence_ending_in_a_request_for_it_is_a_request(query: str) -> None:
    assert not is_statement(query)
    assert analyze(query).detected_intent is Intent.exact


def test_a_colon_before_an_ordinary_verb_keeps_a_statement() -> None:
    assert is_statement("The plan is simple: get funding, hire two engineers.")


@pytest.mark.parametrize(
    ("query", "is_date"),
    [
        ("what happened on 3/14", True),
        ("notes from 14/3", True),
        ("meeting on 12/25/2025", True),
        ("fair to split rent 60/40", False),
        ("a 50/50 split", False),
        ("open 24/7", False),
    ],
)
def test_a_numeric_date_is_a_valid_day_and_month(query: str, is_date: bool) -> None:
    assert ("date" in analyze(query).cues) is is_date


@pytest.mark.parametrize(
    "query",
    [
        "Total revenue grew 20% in 2023.",
        "Group meetings moved to Tuesday.",
        "MAP kinase activates the pathway.",
        "Review of the budget is due in March.",
    ],
)
def test_a_verb_that_is_also_a_noun_still_opens_a_statement(query: str) -> None:
    assert is_statement(query)


@pytest.mark.parametrize(
    "query",
    [
        "ERR_CONN_RESET",
        "1Z999AA10123456784",
        "#reno-week3",
        "#reading-list #fiction",
        "INC-4471 mentions",
        "search my notes for #lowstock",
        "Find the message with ERR_CERT_DATE_INVALID in it",
    ],
)
def test_a_search_for_identifier_strings_only_is_exact(query: str) -> None:
    assert is_bare_code(query)
    qi = analyze(query)
    assert qi.detected_intent is Intent.exact
    assert "code_string" in qi.cues


@pytest.mark.parametrize(
    "query",
    [
        "What did the INC-4471 postmortem conclude?",
        "my #1 priority",
        "COVID-19 notes",
        "IL-10 levels rise after infection.",
        "ERR_CONN_RESET keeps showing up after the router swap.",
        "Q3 2024 plan",
    ],
)
def test_a_code_among_other_words_is_not_a_bare_string_search(query: str) -> None:
    assert not is_bare_code(query)
    assert "code_string" not in analyze(query).cues


def test_digits_inside_a_name_are_not_a_number() -> None:
    assert "number" not in analyze("IL-6 and HIV-1 in F4/80 cells with 4-PBA").cues
    assert "number" in analyze("what happened after 12 weeks").cues


def test_primes_are_not_quotes() -> None:
    qi = analyze("joining 3' of strand breaks compared to 5' ends")
    assert qi.phrases == ()
    assert analyze("find the text 'call me after 5'").phrases == ("call me after 5",)


def test_general_as_a_classifier_is_not_breadth() -> None:
    assert "generally" not in analyze("the general stress marker in cells").cues
    assert analyze("general stuff about startups").detected_intent is Intent.broad


def test_reported_speech_asks_for_the_content() -> None:
    assert analyze("Where did Anna say she parked?").detected_intent is Intent.precise
    assert analyze("Find where I said the budget was tight").detected_intent is Intent.exact


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        ("what did the mechanic say was wrong with the brakes?", Intent.precise),
        ("what did the team say about the on-call rotation?", Intent.balanced),
        ("the receipt for the bike repair", Intent.precise),
        ("my blood pressure reading from the checkup", Intent.precise),
        ("What did I write about reading goals?", Intent.balanced),
        ("when did we last change the water filter", Intent.precise),
        ("Which contractor quoted us for the deck?", Intent.precise),
        ('quote "we ship when it\'s boring"', Intent.exact),
    ],
)
def test_a_fact_or_a_topic(query: str, intent: Intent) -> None:
    assert analyze(query).detected_intent is intent


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        ("What kind of friend am I?", Intent.conceptual),
        ("what am I most afraid of about the move", Intent.conceptual),
        ("how did I feel after the reunion", Intent.conceptual),
        ("what are my rules of thumb for hiring?", Intent.conceptual),
        ("what does a good weekend look like for me?", Intent.conceptual),
        ("What time am I meeting Tom?", Intent.precise),
        ("inspire me with old notes about design", Intent.broad),
        ("what inspires me about design", Intent.conceptual),
        ("give me a wide sweep of my notes on cities", Intent.broad),
        ("bring up anything that resonates with my essay on patience", Intent.broad),
        ("is it selfish to skip the family reunion?", Intent.conceptual),
        ("Was quitting the band a mistake?", Intent.conceptual),
        ("How did John overcome a mistake he made in the game?", Intent.precise),
        ("what overlaps between my work notes and my journal?", Intent.broad),
    ],
)
def test_opinion_and_exploration_phrasings(query: str, intent: Intent) -> None:
    assert analyze(query).detected_intent is intent


def test_capitals_in_other_languages_are_no_names() -> None:
    """A Spanish question opens after ¿, and German capitalises every noun: neither is a name."""
    from brain_search.retrieval.intent.detect import named_entities

    assert named_entities("¿Cómo se llama mi profesora de piano?") == []
    assert named_entities("Was hat mir der Hausarzt geraten?") == []
    assert named_entities("Wann öffnet die Bäckerei am Sonntag?") == []
    assert named_entities("Wann hat die ITV geöffnet?") == ["ITV"]  # an acronym still is one
    assert named_entities("Quand a lieu le mariage de Juliette ?") == ["Juliette"]
    assert named_entities("What did Priya say about the CTO offer?") == ["Priya", "CTO"]
