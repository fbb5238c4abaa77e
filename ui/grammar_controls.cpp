#include "grammar_controls.h"

#include <algorithm>

#include <QComboBox>
#include <QFont>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QVBoxLayout>

#include "sampling/grammar/gbnf.h"
#ifdef WB_HAVE_JSON_SCHEMA
#include "sampling/grammar/json_schema.h"
#endif
#include "theme.h"
#include "util/error.h"

namespace {

struct Example {
    const char* title;
    GrammarControls::Mode mode;
    const char* text;
};

// What people constrain a small model to most often; each compiles (test_sampling_panel checks) and holds
// the default model's replies to what its title promises (test_grammar_examples).
const Example kExamples[] = {
    {QT_TRANSLATE_NOOP("GrammarControls", "JSON object (name, age)"), GrammarControls::Mode::JSON_SCHEMA,
     "{\n  \"type\": \"object\",\n  \"properties\": {\n    \"name\": {\"type\": \"string\"},\n"
     "    \"age\": {\"type\": \"integer\"}\n  },\n  \"required\": [\"name\", \"age\"]\n}"},
    {QT_TRANSLATE_NOOP("GrammarControls", "Any JSON object"), GrammarControls::Mode::JSON_SCHEMA, "{\"type\": \"object\"}"},
    {QT_TRANSLATE_NOOP("GrammarControls", "List of strings"), GrammarControls::Mode::JSON_SCHEMA,
     "{\"type\": \"array\", \"items\": {\"type\": \"string\"}}"},
    {QT_TRANSLATE_NOOP("GrammarControls", "Yes or no"), GrammarControls::Mode::GBNF, "root ::= (\"Yes\" | \"No\") \".\""},
};

bool haveJsonSchema() {
#ifdef WB_HAVE_JSON_SCHEMA
    return true;
#else
    return false;
#endif
}

}  // namespace

GrammarControls::GrammarControls(QWidget* parent, QFormLayout* form) : QObject(parent) {
    auto* title = new QLabel(tr("Constrain output"), parent);
    title->setWordWrap(true);
    QFont bold = title->font();
    bold.setBold(true);
    title->setFont(bold);
    form->addRow(title);
    m_notice = new QLabel(parent);
    m_notice->setWordWrap(true);
    m_notice->hide();
    m_notice->setAccessibleName(tr("Grammar not applied"));
    form->addRow(m_notice);

    m_mode = new QComboBox(parent);
    m_mode->addItem(tr("None"), int(Mode::NONE));
    m_mode->addItem(tr("GBNF"), int(Mode::GBNF));
    // Without nlohmann-json the engine has no JSON Schema converter (as the CLI's --json-schema).
    if (haveJsonSchema()) m_mode->addItem(tr("JSON Schema"), int(Mode::JSON_SCHEMA));
    m_mode->setToolTip(tr("hold the reply to a grammar (llama.cpp's GBNF) or a JSON Schema: only tokens that keep it "
                          "valid can be drawn, and the reply ends only where it is complete"));
    m_mode->setAccessibleName(tr("Output constraint"));
    m_examples = new QComboBox(parent);
    m_examples->addItem(tr("Examples…"));
    for (const Example& e : kExamples)
        if (e.mode != Mode::JSON_SCHEMA || haveJsonSchema()) m_examples->addItem(tr(e.title));
    m_examples->setToolTip(tr("replace the text with a ready grammar or schema"));
    m_examples->setAccessibleName(tr("Grammar examples"));
    // Sized to a few characters, not their longest item: side by side they must fit a narrow dock.
    for (QComboBox* box : {m_mode, m_examples}) {
        box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        box->setMinimumContentsLength(6);
    }
    auto* modeRow = new QHBoxLayout;
    modeRow->setContentsMargins(0, 0, 0, 0);
    modeRow->addWidget(m_mode, 1);
    modeRow->addWidget(m_examples, 1);
    form->addRow(tr("Mode"), modeRow);

    m_editor = new QPlainTextEdit(parent);
    m_editor->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_editor->setTabChangesFocus(true);
    m_editor->setToolTip(tr("the GBNF grammar (matching starts at the rule root) or the JSON Schema the reply must "
                            "follow; a text that does not compile shows its error and the last valid one stays in force"));
    m_editor->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_editor->setFixedHeight(m_editor->fontMetrics().lineSpacing() * 7);
    m_editor->setAccessibleName(tr("Grammar or schema text"));
    m_error = new QLabel(parent);
    m_error->setWordWrap(true);
    m_error->hide();
    Theme::setTextColor(m_error, Theme::Role::Error);
    // The red is baked into the label's palette: taken again for the theme now in force (the panel is
    // built before the saved theme is applied, and the light red is unreadable on a dark window).
    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this,
            [this] {
                Theme::setTextColor(m_error, Theme::Role::Error);
                Theme::setTextColor(m_notice, Theme::Role::Warning);
            });
    Theme::setTextColor(m_notice, Theme::Role::Warning);
    auto* box = new QVBoxLayout;
    box->setContentsMargins(0, 0, 0, 0);
    box->addWidget(m_editor);
    box->addWidget(m_error);
    form->addRow(box);

    connect(m_mode, &QComboBox::currentIndexChanged, this, [this] {
        updateVisibility();
        if (!m_filling) compile();
    });
    connect(m_editor, &QPlainTextEdit::textChanged, this, [this] {
        if (!m_filling) compile();
    });
    connect(m_examples, &QComboBox::activated, this, [this](int index) {
        if (index > 0) loadExample(index);
        m_examples->setCurrentIndex(0);
    });
    updateVisibility();
}

GrammarControls::Mode GrammarControls::mode() const {
    return Mode(m_mode->currentData().toInt());
}

void GrammarControls::read(wb::SamplingParams& p) const {
    p.grammar = m_grammar;
    p.grammar_mode = mode();
    p.grammar_source = m_editor->toPlainText().toStdString();
}

void GrammarControls::fill(const wb::SamplingParams& p) {
    Mode mode = p.grammar_mode;
    QString text = QString::fromStdString(p.grammar_source);
    if (mode == Mode::NONE && text.isEmpty() && !p.grammar.empty()) {
        mode = Mode::GBNF;
        text = QString::fromStdString(p.grammar);
    }
    showNotice(QString());
    m_filling = true;
    m_grammar = p.grammar;
    // A mode this build lacks (JSON Schema without nlohmann-json) shows as None; the text stays.
    m_mode->setCurrentIndex(std::max(0, m_mode->findData(int(mode))));
    // Set only when it differs: setPlainText moves the cursor and clears the undo history, and a
    // preset applied while typing hands the same text back.
    if (m_editor->toPlainText() != text) m_editor->setPlainText(text);
    m_filling = false;
    QString error;
    compiled(&error);
    showError(error);
}

void GrammarControls::setSource(Mode mode, const QString& text) {
    m_filling = true;
    m_mode->setCurrentIndex(std::max(0, m_mode->findData(int(mode))));
    m_editor->setPlainText(text);
    m_filling = false;
    compile();
}

void GrammarControls::loadExample(int index) {
    int row = 0;
    for (const Example& e : kExamples) {
        if (e.mode == Mode::JSON_SCHEMA && !haveJsonSchema()) continue;
        if (++row == index) return setSource(e.mode, QString::fromUtf8(e.text));
    }
}

void GrammarControls::updateVisibility() {
    const bool on = mode() != Mode::NONE;
    m_editor->setVisible(on);
    m_error->setVisible(on && !m_error->text().isEmpty());
    m_editor->setPlaceholderText(mode() == Mode::JSON_SCHEMA ? tr("a JSON Schema, e.g. {\"type\": \"object\"}")
                                                             : tr("GBNF rules from root, e.g. root ::= \"yes\" | \"no\""));
}

std::string GrammarControls::compileSource(Mode mode, const std::string& text) {
    // An empty text is no grammar (as an empty "grammar" field of the server).
    if (mode == Mode::NONE || QString::fromStdString(text).trimmed().isEmpty()) return {};
#ifdef WB_HAVE_JSON_SCHEMA
    std::string gbnf = mode == Mode::JSON_SCHEMA ? wb::json_schema_to_gbnf(text) : text;
#else
    if (mode == Mode::JSON_SCHEMA) throw wb::Error("this build has no JSON Schema converter (nlohmann-json)");
    std::string gbnf = text;
#endif
    wb::parse_gbnf(gbnf);
    return gbnf;
}

bool GrammarControls::findExample(const char* title, Mode* mode, QString* text) {
    for (const Example& e : kExamples) {
        if (qstrcmp(e.title, title) != 0 || (e.mode == Mode::JSON_SCHEMA && !haveJsonSchema())) continue;
        *mode = e.mode;
        *text = QString::fromUtf8(e.text);
        return true;
    }
    return false;
}

std::string GrammarControls::compiled(QString* error) const {
    error->clear();
    try {
        return compileSource(mode(), m_editor->toPlainText().toStdString());
    } catch (const wb::Error& e) {
        *error = (m_grammar.empty() ? tr("%1 (not applied: no grammar is in force)")
                                    : tr("%1 (not applied: the last valid grammar stays in force)"))
                     .arg(QString::fromStdString(e.what()));
    }
    return {};
}

void GrammarControls::showError(const QString& error) {
    m_error->setText(error);
    m_error->setVisible(mode() != Mode::NONE && !error.isEmpty());
}

void GrammarControls::showNotice(const QString& text) {
    m_notice->setText(text);
    m_notice->setVisible(!text.isEmpty());
}

void GrammarControls::compile() {
    showNotice(QString());
    QString error;
    std::string gbnf = compiled(&error);
    showError(error);
    if (error.isEmpty()) m_grammar = std::move(gbnf);
    // Also when only the text changed: what the user wrote is kept, compiling or not.
    Q_EMIT changed();
}
