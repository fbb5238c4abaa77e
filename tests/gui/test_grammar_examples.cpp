// The Sampling panel's ready grammar examples on the default model: with each one chosen, as the
// panel hands it to the engine (its GBNF, the panel's default sampling, a fixed seed), replies to a
// few prompts end by EOS and are what the example's title promises, checked here by Qt's JSON parser
// and by hand, independently of the grammar (issue 17: "a grammar / JSON-schema editor with a few
// ready examples (JSON object, list, yes/no)").
#include <QComboBox>
#include <QLabel>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <memory>

#include "engine/backend_cpu.h"
#include "engine/chat_prompt.h"
#include "engine/model.h"
#include "engine/session.h"
#include "grammar_controls.h"
#include "gui_test_support.h"
#include "model/model_paths.h"
#include "sampling_panel.h"

namespace {

bool isInteger(const QJsonValue& v) { return v.isDouble() && std::floor(v.toDouble()) == v.toDouble(); }

struct ExampleCase {
    const char* title;
    std::vector<std::string> prompts;  // ones that ask for the shape: the small model's strings then end
    // "" when a reply is what the title promises, else what is wrong.
    QString (*check)(const QJsonDocument& doc, const QString& reply);
};

const ExampleCase kCases[] = {
    {"JSON object (name, age)",
     {"Give a person's name and age as JSON.", "Describe a person as JSON.", "Make up a character with a name and an age."},
     [](const QJsonDocument& doc, const QString&) {
         const QJsonObject o = doc.object();
         return doc.isObject() && o["name"].isString() && isInteger(o["age"]) ? QString()
                                                                              : QStringLiteral("not an object of a string name and an integer age");
     }},
    {"Any JSON object",
     {"Describe a cat as a JSON object.", "Give me a JSON object with a city and its country.", "Write a JSON object about a car."},
     [](const QJsonDocument& doc, const QString&) { return doc.isObject() ? QString() : QStringLiteral("not an object"); }},
    {"List of strings",
     {"List three fruits.", "Name four colours as a JSON list.", "Which days make up the weekend?"},
     [](const QJsonDocument& doc, const QString&) {
         if (!doc.isArray()) return QStringLiteral("not an array");
         for (const QJsonValue& v : doc.array())
             if (!v.isString()) return QStringLiteral("an item is not a string");
         return QString();
     }},
    {"Yes or no",
     {"Is the sky blue?", "Is fire cold?", "Hello!"},
     [](const QJsonDocument&, const QString& reply) {
         return reply == "Yes." || reply == "No." ? QString() : QStringLiteral("not 'Yes.' or 'No.'");
     }},
};

const ExampleCase* caseFor(const QString& title) {
    for (const ExampleCase& c : kCases)
        if (title == c.title) return &c;
    return nullptr;
}

}  // namespace

class TestGrammarExamples : public QObject {
    Q_OBJECT

    std::unique_ptr<wb::Model> m_model;
    std::unique_ptr<wb::CpuBackend> m_backend;

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_grammar_examples");
        const std::string path = wb::default_model_path();
        if (!std::ifstream(path).good()) QFAIL("default model missing: run scripts/fetch-models.sh");
        m_model = wb::Model::load(path);
        m_backend = std::make_unique<wb::CpuBackend>(0);
    }

    void everyExampleHoldsRepliesToWhatItPromises_data() {
        QTest::addColumn<int>("index");
        SamplingPanel panel;
        const QComboBox* box = panel.grammarControls()->exampleBox();
        QCOMPARE(box->count(), 5);  // the title and four examples: each has a row and a check
        for (int i = 1; i < box->count(); ++i) QTest::newRow(qPrintable(box->itemText(i))) << i;
    }
    void everyExampleHoldsRepliesToWhatItPromises() {
        QFETCH(int, index);
        SamplingPanel panel;
        GrammarControls* g = panel.grammarControls();
        g->loadExample(index);
        const QString title = g->exampleBox()->itemText(index);
        wb::SamplingParams p = panel.params();
        QVERIFY2(!p.grammar.empty(), qPrintable(g->errorLabel()->text()));
        p.max_tokens = 200;
        const ExampleCase* c = caseFor(title);
        QVERIFY2(c, qPrintable(title + ": no prompts or check for this example: add them to kCases"));
        for (size_t i = 0; i < c->prompts.size(); ++i) {
            p.seed = 100 + i;
            wb::Session s(*m_model, *m_backend);
            const auto prompt = wb::build_chat_prompt(*m_model, {{"user", c->prompts[i]}}, true).ids;
            const wb::GenerateResult r = s.generate(prompt, wb::LiveSamplingParams(p));
            const QString reply = QString::fromStdString(r.text);
            qInfo("%s, prompt %zu: %s", qPrintable(title), i, qPrintable(reply));
            QVERIFY2(r.reason == wb::StopReason::EOS,
                     qPrintable(QString("prompt %1 did not end by EOS: %2 %3").arg(i).arg(r.error.c_str(), reply)));
            // Qt's parser, independent of the grammar; the yes/no check reads the text itself.
            QJsonParseError error;
            const QJsonDocument doc = QJsonDocument::fromJson(reply.toUtf8(), &error);
            const bool json = title != "Yes or no";
            QVERIFY2(!json || error.error == QJsonParseError::NoError,
                     qPrintable(QString("prompt %1: not JSON (%2): %3").arg(i).arg(error.errorString(), reply)));
            const QString problem = c->check(doc, reply);
            QVERIFY2(problem.isEmpty(), qPrintable(QString("prompt %1: %2 in %3").arg(i).arg(problem, reply)));
        }
    }
};

QTEST_MAIN(TestGrammarExamples)
#include "test_grammar_examples.moc"
