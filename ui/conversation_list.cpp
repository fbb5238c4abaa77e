#include "conversation_list.h"

#include <QApplication>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QPainter>
#include <QPushButton>
#include <QShortcut>
#include <QStyledItemDelegate>
#include <QVBoxLayout>

#include "chat_controller.h"
#include "conversation_store.h"

namespace {

constexpr int kIdRole = Qt::UserRole;
constexpr int kSubtitleRole = Qt::UserRole + 1;
constexpr int kCurrentRole = Qt::UserRole + 2;

// Two lines per conversation: the title (bold for the one on screen) and, smaller and dimmer, the
// date and model. Editing edits the title only.
class ConversationDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    // Whether a title editor is open (the list's own state() is not public).
    bool isEditing() const { return m_openEditors > 0; }

    QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        ++m_openEditors;
        return QStyledItemDelegate::createEditor(parent, option, index);
    }

    void destroyEditor(QWidget* editor, const QModelIndex& index) const override {
        --m_openEditors;
        QStyledItemDelegate::destroyEditor(editor, index);
    }

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        QStyleOptionViewItem opt = option;
        initStyleOption(&opt, index);
        const QString title = opt.text;
        opt.text.clear();
        QStyle* style = opt.widget ? opt.widget->style() : QApplication::style();
        style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, opt.widget);

        const QRect r = opt.rect.adjusted(6, 3, -6, -3);
        const bool selected = opt.state & QStyle::State_Selected;
        const QPalette::ColorRole textRole = selected ? QPalette::HighlightedText : QPalette::Text;
        QFont titleFont = opt.font;
        titleFont.setBold(index.data(kCurrentRole).toBool());
        const QFontMetrics tm(titleFont);
        painter->save();
        painter->setFont(titleFont);
        painter->setPen(opt.palette.color(textRole));
        painter->drawText(QRect(r.left(), r.top(), r.width(), tm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                          tm.elidedText(title, Qt::ElideRight, r.width()));
        QFont small = opt.font;
        small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
        const QFontMetrics sm(small);
        painter->setFont(small);
        QColor dim = opt.palette.color(textRole);
        dim.setAlphaF(0.7f);
        painter->setPen(dim);
        painter->drawText(QRect(r.left(), r.top() + tm.height() + 1, r.width(), sm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                          sm.elidedText(index.data(kSubtitleRole).toString(), Qt::ElideRight, r.width()));
        painter->restore();
    }

    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex&) const override {
        QFont small = option.font;
        small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
        return {option.fontMetrics.averageCharWidth() * 16, option.fontMetrics.height() + QFontMetrics(small).height() + 8};
    }

private:
    mutable int m_openEditors = 0;
};

}  // namespace

ConversationList::ConversationList(ChatController* controller, ConversationStore* store, QWidget* parent)
    : QWidget(parent), m_controller(controller), m_store(store) {
    m_search = new QLineEdit(this);
    m_search->setPlaceholderText(tr("Search conversations"));
    m_search->setAccessibleName(tr("Search conversations"));
    m_search->setClearButtonEnabled(true);
    m_list = new QListWidget(this);
    m_list->setAccessibleName(tr("Conversations"));
    auto* delegate = new ConversationDelegate(m_list);
    m_list->setItemDelegate(delegate);
    // Queued: the view leaves its editing state after the delegate's signal.
    connect(delegate, &QAbstractItemDelegate::closeEditor, this, [this] {
        if (m_refreshPending) refresh();
    }, Qt::QueuedConnection);
    m_list->setEditTriggers(QAbstractItemView::EditKeyPressed);
    m_list->setContextMenuPolicy(Qt::CustomContextMenu);
    m_list->setUniformItemSizes(true);
    m_newButton = new QPushButton(tr("New chat"), this);
    m_newButton->setToolTip(tr("Start a new conversation (the one on screen stays in the list)"));
    m_undoButton = new QPushButton(tr("Undo delete"), this);
    m_undoButton->setVisible(false);

    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_newButton);
    buttons->addWidget(m_undoButton);
    buttons->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_search);
    layout->addWidget(m_list, 1);
    layout->addLayout(buttons);

    auto* del = new QShortcut(QKeySequence::Delete, m_list, this, &ConversationList::deleteSelected, Qt::WidgetShortcut);
    del->setObjectName(QStringLiteral("deleteConversationShortcut"));
    new QShortcut(QKeySequence::Undo, this, this, &ConversationList::undoDelete, Qt::WidgetWithChildrenShortcut);

    connect(m_search, &QLineEdit::textChanged, this, &ConversationList::refresh);
    connect(m_list, &QListWidget::itemClicked, this, &ConversationList::handleActivated);
    connect(m_list, &QListWidget::itemActivated, this, &ConversationList::handleActivated);
    connect(m_list, &QListWidget::itemChanged, this, &ConversationList::handleEdited);
    connect(m_list, &QWidget::customContextMenuRequested, this, &ConversationList::handleContextMenu);
    connect(m_newButton, &QPushButton::clicked, m_controller, &ChatController::newChat);
    connect(m_undoButton, &QPushButton::clicked, this, &ConversationList::undoDelete);
    // Queued: a rename or an open arrives from inside the list's own edit or click, whose item the
    // refresh replaces.
    connect(m_store, &ConversationStore::changed, this, &ConversationList::refresh, Qt::QueuedConnection);
    connect(m_controller, &ChatController::currentConversationChanged, this, &ConversationList::refresh, Qt::QueuedConnection);
    refresh();
}

QString ConversationList::dateText(const QDateTime& when) {
    const QDateTime local = when.toLocalTime();
    const QDate today = QDate::currentDate();
    if (local.date() == today) return QLocale().toString(local.time(), QLocale::ShortFormat);
    if (local.date().year() == today.year()) return QLocale().toString(local.date(), QStringLiteral("d MMM"));
    return QLocale().toString(local.date(), QLocale::ShortFormat);
}

void ConversationList::refresh() {
    if (static_cast<const ConversationDelegate*>(m_list->itemDelegate())->isEditing()) {
        m_refreshPending = true;
        return;
    }
    m_refreshPending = false;
    const QString selected = m_list->currentItem() ? m_list->currentItem()->data(kIdRole).toString() : QString();
    // Filling the list is not an edit or a click.
    const QSignalBlocker block(m_list);
    m_list->clear();
    for (const ConversationInfo& info : m_store->search(m_search->text())) {
        auto* item = new QListWidgetItem(info.title, m_list);
        item->setFlags(item->flags() | Qt::ItemIsEditable);
        item->setData(kIdRole, info.id);
        const QString subtitle = info.model.isEmpty() ? dateText(info.updated) : dateText(info.updated) + QStringLiteral(" · ") + info.model;
        item->setData(kSubtitleRole, subtitle);
        item->setData(kCurrentRole, info.id == m_controller->currentId());
        item->setToolTip(tr("%1\n%2 · %n message(s)", nullptr, info.messages).arg(info.title, subtitle));
        if (info.id == selected) m_list->setCurrentItem(item);
    }
    m_undoButton->setVisible(m_store->canUndoRemove());
    m_undoButton->setToolTip(tr("Bring back “%1”").arg(m_store->lastRemovedTitle()));
}

QStringList ConversationList::shownIds() const {
    QStringList ids;
    for (int i = 0; i < m_list->count(); ++i) ids << m_list->item(i)->data(kIdRole).toString();
    return ids;
}

bool ConversationList::select(const QString& id) {
    for (int i = 0; i < m_list->count(); ++i)
        if (m_list->item(i)->data(kIdRole).toString() == id) {
            m_list->setCurrentRow(i);
            return true;
        }
    return false;
}

void ConversationList::handleActivated(QListWidgetItem* item) {
    if (item) openById(item->data(kIdRole).toString());
}

void ConversationList::openById(const QString& id) {
    QString error;
    if (!m_controller->openConversation(id, &error)) Q_EMIT errorOccurred(tr("Cannot open the conversation"), error);
}

void ConversationList::handleEdited(QListWidgetItem* item) {
    QString error;
    if (!m_controller->renameConversation(item->data(kIdRole).toString(), item->text(), &error))
        Q_EMIT errorOccurred(tr("Cannot rename the conversation"), error);
    // The store's change refreshes the list (an empty name shows the first message again).
}

void ConversationList::renameSelected() {
    if (QListWidgetItem* item = m_list->currentItem()) m_list->editItem(item);
}

void ConversationList::deleteSelected() {
    QListWidgetItem* item = m_list->currentItem();
    if (!item) return;
    QString error;
    if (!m_controller->deleteConversation(item->data(kIdRole).toString(), &error))
        Q_EMIT errorOccurred(tr("Cannot delete the conversation"), error);
}

void ConversationList::undoDelete() {
    if (!m_store->canUndoRemove()) return;
    QString error;
    const QString id = m_store->undoRemove(&error);
    if (id.isEmpty())
        Q_EMIT errorOccurred(tr("Cannot bring the conversation back"), error);
    else
        select(id);
}

void ConversationList::handleContextMenu(const QPoint& pos) {
    QListWidgetItem* item = m_list->itemAt(pos);
    auto* menu = new QMenu(this);
    menu->setAttribute(Qt::WA_DeleteOnClose);
    if (item) {
        m_list->setCurrentItem(item);
        // By id: the menu stays open while an autosave may refresh the list, which deletes the items.
        const QString id = item->data(kIdRole).toString();
        menu->addAction(tr("Open"), this, [this, id] { openById(id); });
        menu->addAction(tr("Rename…"), this, &ConversationList::renameSelected);
        menu->addAction(tr("Delete"), this, &ConversationList::deleteSelected);
        menu->addSeparator();
    }
    menu->addAction(tr("Undo delete"), this, &ConversationList::undoDelete)->setEnabled(m_store->canUndoRemove());
    menu->popup(m_list->viewport()->mapToGlobal(pos));
}
