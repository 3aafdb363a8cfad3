//! An in-memory object store that passes every call on, for the tests that
//! watch or change what a store answers: bytes fetched and list requests
//! counted, listed modification times set, an object removed by another
//! process between a listing and the next request.

use std::sync::Arc;

use futures::StreamExt;
use object_store::memory::InMemory;
use object_store::path::Path as ObjPath;
use object_store::{ObjectMeta, ObjectStore};

/// What a [`Passing`] store does around the calls it passes on to its
/// [`InMemory`]; each default does nothing.
pub trait Watch: std::fmt::Debug + Send + Sync + 'static {
    /// Before a GET of `key` (a HEAD when `head`) is passed on to `inner`.
    fn get(&self, _inner: &InMemory, _key: &ObjPath, _head: bool) {}
    /// A GET that is no HEAD answered with `bytes` bytes.
    fn got(&self, _bytes: u64) {}
    /// The object a GET returns, as the caller sees it.
    fn got_meta(&self, m: ObjectMeta) -> ObjectMeta {
        m
    }
    /// A list request, with a delimiter or without.
    fn listing(&self) {}
    /// Each object a list request returns, as the caller sees it.
    fn listed(&self, m: ObjectMeta) -> ObjectMeta {
        m
    }
    /// Each common prefix a list request with a delimiter returns.
    fn listed_prefix(&self) {}
}

/// An [`InMemory`] store whose calls `watch` sees (and may change) on the way.
#[derive(Debug, Default)]
pub struct Passing<W> {
    pub inner: InMemory,
    pub watch: Arc<W>,
}

impl<W> std::fmt::Display for Passing<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Passing")
    }
}

#[async_trait::async_trait]
impl<W: Watch> ObjectStore for Passing<W> {
    async fn put_opts(
        &self,
        l: &ObjPath,
        p: object_store::PutPayload,
        o: object_store::PutOptions,
    ) -> object_store::Result<object_store::PutResult> {
        self.inner.put_opts(l, p, o).await
    }
    async fn put_multipart_opts(
        &self,
        l: &ObjPath,
        o: object_store::PutMultipartOptions,
    ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
        self.inner.put_multipart_opts(l, o).await
    }
    async fn get_opts(
        &self,
        l: &ObjPath,
        o: object_store::GetOptions,
    ) -> object_store::Result<object_store::GetResult> {
        let head = o.head;
        self.watch.get(&self.inner, l, head);
        let mut r = self.inner.get_opts(l, o).await?;
        if !head {
            self.watch.got(r.range.end - r.range.start);
        }
        r.meta = self.watch.got_meta(r.meta);
        Ok(r)
    }
    fn delete_stream(
        &self,
        l: futures::stream::BoxStream<'static, object_store::Result<ObjPath>>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<ObjPath>> {
        self.inner.delete_stream(l)
    }
    fn list(&self, p: Option<&ObjPath>) -> futures::stream::BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.watch.listing();
        let watch = Arc::clone(&self.watch);
        self.inner.list(p).map(move |m| m.map(|m| watch.listed(m))).boxed()
    }
    async fn list_with_delimiter(&self, p: Option<&ObjPath>) -> object_store::Result<object_store::ListResult> {
        self.watch.listing();
        let mut r = self.inner.list_with_delimiter(p).await?;
        r.objects = r.objects.into_iter().map(|m| self.watch.listed(m)).collect();
        r.common_prefixes.iter().for_each(|_| self.watch.listed_prefix());
        Ok(r)
    }
    async fn copy_opts(&self, f: &ObjPath, t: &ObjPath, o: object_store::CopyOptions) -> object_store::Result<()> {
        self.inner.copy_opts(f, t, o).await
    }
}
