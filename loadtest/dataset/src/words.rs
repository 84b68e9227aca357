//! The word lists the generator draws from. Some names carry non-ASCII letters on purpose, so the
//! seeded data checks that both databases store and return UTF-8 alike. Changing a list changes
//! every data set: the manifest's `format` must then change too.

/// (display, e-mail spelling).
pub const FIRST_NAMES: &[(&str, &str)] = &[
    ("Ada", "ada"),
    ("Alan", "alan"),
    ("Grace", "grace"),
    ("Edsger", "edsger"),
    ("Barbara", "barbara"),
    ("Donald", "donald"),
    ("Frances", "frances"),
    ("Niklaus", "niklaus"),
    ("Zoë", "zoe"),
    ("José", "jose"),
    ("Søren", "soren"),
    ("Łucja", "lucja"),
    ("Margaret", "margaret"),
    ("Ken", "ken"),
    ("Radia", "radia"),
    ("Tim", "tim"),
];

/// (display, e-mail spelling).
pub const LAST_NAMES: &[(&str, &str)] = &[
    ("Lovelace", "lovelace"),
    ("Turing", "turing"),
    ("Hopper", "hopper"),
    ("Dijkstra", "dijkstra"),
    ("Liskov", "liskov"),
    ("Knuth", "knuth"),
    ("Allen", "allen"),
    ("Wirth", "wirth"),
    ("Müller", "mueller"),
    ("García", "garcia"),
    ("Kierkegaard", "kierkegaard"),
    ("Nowak", "nowak"),
    ("Hamilton", "hamilton"),
    ("Thompson", "thompson"),
    ("Perlman", "perlman"),
    ("Berners-Lee", "berners-lee"),
];

/// A city with its ISO 3166 country, ISO 4217 currency and the digits of its postal codes.
pub struct City {
    pub name: &'static str,
    pub country: &'static str,
    pub currency: &'static str,
    pub postal_digits: u32,
}

const fn city(name: &'static str, country: &'static str, currency: &'static str, postal_digits: u32) -> City {
    City { name, country, currency, postal_digits }
}

pub const CITIES: &[City] = &[
    city("Berlin", "DE", "EUR", 5),
    city("München", "DE", "EUR", 5),
    city("Hamburg", "DE", "EUR", 5),
    city("Paris", "FR", "EUR", 5),
    city("Lyon", "FR", "EUR", 5),
    city("Madrid", "ES", "EUR", 5),
    city("Milano", "IT", "EUR", 5),
    city("Wien", "AT", "EUR", 4),
    city("Amsterdam", "NL", "EUR", 4),
    city("Kraków", "PL", "PLN", 5),
    city("København", "DK", "DKK", 4),
    city("Stockholm", "SE", "SEK", 5),
    city("Zürich", "CH", "CHF", 4),
    city("Boston", "US", "USD", 5),
];

pub const STREETS: &[&str] = &[
    "Hauptstraße",
    "Rue de la Paix",
    "Calle Mayor",
    "Via Roma",
    "Main Street",
    "Kungsgatan",
    "Bahnhofstrasse",
    "Long Lane",
    "Market Square",
    "Church Road",
];

pub const PRODUCT_ADJECTIVES: &[&str] =
    &["Oak", "Steel", "Linen", "Wool", "Glass", "Cedar", "Copper", "Bamboo", "Cotton", "Marble", "Cork", "Felt"];

pub const PRODUCT_NOUNS: &[&str] =
    &["Lamp", "Chair", "Mug", "Blanket", "Vase", "Shelf", "Kettle", "Basket", "Towel", "Clock", "Stool", "Tray"];

/// Words of the optional note: ordinary text, so it compresses like text (neither like a run of
/// one letter nor like random bytes).
pub const NOTE_WORDS: &[&str] = &[
    "please",
    "deliver",
    "the",
    "parcel",
    "to",
    "my",
    "neighbour",
    "if",
    "nobody",
    "is",
    "at",
    "home",
    "ring",
    "twice",
    "gift",
    "wrap",
    "and",
    "no",
    "invoice",
    "inside",
    "leave",
    "it",
    "by",
    "back",
    "door",
    "call",
    "me",
    "before",
    "you",
    "arrive",
    "fragile",
    "handle",
    "with",
    "care",
    "thank",
    "so",
    "much",
    "for",
    "fast",
    "shipping",
    "order",
    "for",
    "birthday",
    "on",
    "friday",
    "morning",
    "office",
    "floor",
    "three",
    "reception",
    "desk",
    "weekend",
    "only",
    "after",
    "six",
    "pm",
    "code",
    "gate",
    "blue",
    "house",
    "corner",
    "garden",
    "shed",
    "box",
];
