//! `wasi:filesystem/types` as a component sees it: wasmtime-wasi's implementation, with
//! two differences.
//!
//! - Every operation that can make the data directory grow is charged to its quota first
//!   ([`Usage`], see `disk.rs`): `write`, `set-size`, the output streams of
//!   `write-via-stream` and `append-via-stream` (each of their writes), `open-at` that
//!   creates, `create-directory-at`, `symlink-at`, `link-at` and `rename-at`. At the quota
//!   the operation fails with `insufficient-space`, and the component goes on. Only
//!   descriptors opened read-write are charged: the data directory is the only one.
//! - `read-directory` lists lazily: the stream holds an open directory and reads it
//!   as the guest asks for entries (wasmtime-wasi reads the whole directory into memory
//!   when the stream is made, so many open listings of a large folder could hold the
//!   host's memory).
//!
//! Linked over wasmtime-wasi's `wasi:filesystem/types` by [`add_to_linker`].

use super::disk::{blocks_of, Charge, Usage};
use bytes::Bytes;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, ErrorCode, HostDescriptor, HostDirectoryEntryStream,
};
use wasmtime_wasi::p2::{
    DynOutputStream, FsError, FsResult, OutputStream, Pollable, ReaddirIterator, StreamError,
    StreamResult,
};

/// The filesystem as one component's calls see it.
pub(super) struct Files<'a> {
    pub fs: WasiFilesystemCtxView<'a>,
    /// The quota to charge; `None`: no data directory (nothing is writable).
    pub usage: Option<&'a Arc<Usage>>,
}

struct FilesData;

impl HasData for FilesData {
    type Data<'a> = Files<'a>;
}

/// Links [`Files`] as `wasi:filesystem/types`, over what wasmtime-wasi linked.
pub(super) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> Files<'_>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let linked = types::add_to_linker::<T, FilesData>(linker, get);
    linker.allow_shadowing(false);
    linked
}

/// Most bytes one write to a file stream may carry (as wasmtime-wasi's streams).
const STREAM_WRITE: usize = 1 << 20;

fn no_space() -> FsError {
    ErrorCode::InsufficientSpace.into()
}

/// A handle on `fd` that does not own it, to pass it on.
fn again(fd: &Resource<types::Descriptor>) -> Resource<types::Descriptor> {
    Resource::new_borrow(fd.rep())
}

/// The growth, in counted bytes, from a file of `old` bytes to one of `new`.
fn growth(old: u64, new: u64) -> u64 {
    blocks_of(new).saturating_sub(blocks_of(old))
}

impl Files<'_> {
    /// The quota, if `fd` is a writable descriptor (so one in the data directory).
    fn charged(&self, fd: &Resource<types::Descriptor>) -> Option<Arc<Usage>> {
        let writable = match self.fs.table.get(fd).ok()? {
            Descriptor::File(f) => !f.perms.write_not_permitted(),
            Descriptor::Dir(d) => !d.perms.write_not_permitted(),
        };
        self.usage.filter(|_| writable).cloned()
    }

    /// Charges what making `fd` (a file) `end(old length)` long costs; the charge made.
    fn charge_growth(
        &self,
        fd: &Resource<types::Descriptor>,
        end: impl FnOnce(u64) -> u64,
    ) -> FsResult<Charged> {
        let Some(usage) = self.charged(fd) else {
            return Ok(None);
        };
        let Ok(Descriptor::File(f)) = self.fs.table.get(fd) else {
            return Ok(None);
        };
        let old = f.file.metadata()?.len();
        let charge = usage
            .charge(growth(old, end(old)))
            .map_err(|_| no_space())?;
        Ok(Some((usage, charge)))
    }

    /// Charges `bytes` for a new entry under the directory `fd`.
    fn charge_entry(&self, fd: &Resource<types::Descriptor>, bytes: u64) -> FsResult<Charged> {
        let Some(usage) = self.charged(fd) else {
            return Ok(None);
        };
        let charge = usage.charge(bytes).map_err(|_| no_space())?;
        Ok(Some((usage, charge)))
    }
}

/// A charge made to a quota; `None`: nothing to charge.
type Charged = Option<(Arc<Usage>, Charge)>;

/// Gives back `charged` if the operation failed.
fn settle<T>(result: FsResult<T>, charged: Charged) -> FsResult<T> {
    if let (Err(_), Some((usage, charge))) = (&result, charged) {
        usage.refund(charge);
    }
    result
}

impl types::Host for Files<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        types::Host::convert_error_code(&mut self.fs, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        types::Host::filesystem_error_code(&mut self.fs, err)
    }
}

impl HostDescriptor for Files<'_> {
    async fn advise(
        &mut self,
        fd: Resource<types::Descriptor>,
        offset: types::Filesize,
        len: types::Filesize,
        advice: types::Advice,
    ) -> FsResult<()> {
        self.fs.advise(fd, offset, len, advice).await
    }

    async fn sync_data(&mut self, fd: Resource<types::Descriptor>) -> FsResult<()> {
        self.fs.sync_data(fd).await
    }

    async fn get_flags(
        &mut self,
        fd: Resource<types::Descriptor>,
    ) -> FsResult<types::DescriptorFlags> {
        self.fs.get_flags(fd).await
    }

    async fn get_type(
        &mut self,
        fd: Resource<types::Descriptor>,
    ) -> FsResult<types::DescriptorType> {
        self.fs.get_type(fd).await
    }

    async fn set_size(
        &mut self,
        fd: Resource<types::Descriptor>,
        size: types::Filesize,
    ) -> FsResult<()> {
        let charge = self.charge_growth(&fd, |_| size)?;
        let shrinks = charge.as_ref().map(|(usage, _)| usage.clone());
        let result = settle(self.fs.set_size(fd, size).await, charge);
        if let Some(usage) = shrinks.filter(|_| result.is_ok()) {
            usage.shrunk();
        }
        result
    }

    async fn set_times(
        &mut self,
        fd: Resource<types::Descriptor>,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        self.fs.set_times(fd, atim, mtim).await
    }

    async fn read(
        &mut self,
        fd: Resource<types::Descriptor>,
        len: types::Filesize,
        offset: types::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        self.fs.read(fd, len, offset).await
    }

    async fn write(
        &mut self,
        fd: Resource<types::Descriptor>,
        buf: Vec<u8>,
        offset: types::Filesize,
    ) -> FsResult<types::Filesize> {
        let end = offset.saturating_add(buf.len() as u64);
        let charge = self.charge_growth(&fd, |old| old.max(end))?;
        settle(self.fs.write(fd, buf, offset).await, charge)
    }

    async fn read_directory(
        &mut self,
        fd: Resource<types::Descriptor>,
    ) -> FsResult<Resource<types::DirectoryEntryStream>> {
        let dir = match self.fs.table.get(&fd)? {
            Descriptor::Dir(d) => d.dir.clone(),
            Descriptor::File(_) => return Err(ErrorCode::NotDirectory.into()),
        };
        let listing = Listing::of(&dir)?;
        let pushed = self.fs.table.push(listing)?;
        Ok(Resource::new_own(pushed.rep()))
    }

    async fn sync(&mut self, fd: Resource<types::Descriptor>) -> FsResult<()> {
        self.fs.sync(fd).await
    }

    async fn create_directory_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        path: String,
    ) -> FsResult<()> {
        let charge = self.charge_entry(&fd, Usage::name_cost(&path))?;
        settle(self.fs.create_directory_at(fd, path).await, charge)
    }

    async fn stat(&mut self, fd: Resource<types::Descriptor>) -> FsResult<types::DescriptorStat> {
        self.fs.stat(fd).await
    }

    async fn stat_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::DescriptorStat> {
        self.fs.stat_at(fd, path_flags, path).await
    }

    async fn set_times_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        path_flags: types::PathFlags,
        path: String,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        self.fs.set_times_at(fd, path_flags, path, atim, mtim).await
    }

    async fn link_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        old_path_flags: types::PathFlags,
        old_path: String,
        new_descriptor: Resource<types::Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        // A second name for a file counts it twice, as the measurement does.
        let size = match self.charged(&new_descriptor) {
            None => 0,
            Some(_) => self
                .fs
                .stat_at(again(&fd), types::PathFlags::empty(), old_path.clone())
                .await
                .map_or(0, |s| s.size),
        };
        let cost = Usage::name_cost(&new_path) + blocks_of(size);
        let charge = self.charge_entry(&new_descriptor, cost)?;
        let linked = self
            .fs
            .link_at(fd, old_path_flags, old_path, new_descriptor, new_path)
            .await;
        settle(linked, charge)
    }

    async fn open_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        path_flags: types::PathFlags,
        path: String,
        oflags: types::OpenFlags,
        flags: types::DescriptorFlags,
    ) -> FsResult<Resource<types::Descriptor>> {
        let usage = self.charged(&fd);
        let mut charge = None;
        if usage.is_some() && oflags.contains(types::OpenFlags::CREATE) {
            let exists = self
                .fs
                .stat_at(again(&fd), path_flags, path.clone())
                .await
                .is_ok();
            if !exists {
                charge = self.charge_entry(&fd, Usage::name_cost(&path))?;
            }
        }
        let opened = settle(
            self.fs.open_at(fd, path_flags, path, oflags, flags).await,
            charge,
        )?;
        if let Some(usage) = usage {
            if let Descriptor::File(f) = self.fs.table.get(&opened)? {
                usage.track(&f.file);
            }
            if oflags.contains(types::OpenFlags::TRUNCATE) {
                usage.shrunk();
            }
        }
        Ok(opened)
    }

    fn drop(&mut self, fd: Resource<types::Descriptor>) -> wasmtime::Result<()> {
        HostDescriptor::drop(&mut self.fs, fd)
    }

    async fn readlink_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        path: String,
    ) -> FsResult<String> {
        self.fs.readlink_at(fd, path).await
    }

    async fn remove_directory_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        path: String,
    ) -> FsResult<()> {
        let usage = self.charged(&fd);
        self.fs.remove_directory_at(fd, path).await?;
        if let Some(usage) = usage {
            usage.shrunk();
        }
        Ok(())
    }

    async fn rename_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        old_path: String,
        new_fd: Resource<types::Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        // The new name grows its directory; a file it replaces is given back later.
        let charge = self.charge_entry(&new_fd, Usage::entry_bytes(&new_path))?;
        let shrinks = charge.as_ref().map(|(usage, _)| usage.clone());
        let renamed = settle(
            self.fs.rename_at(fd, old_path, new_fd, new_path).await,
            charge,
        );
        if let Some(usage) = shrinks.filter(|_| renamed.is_ok()) {
            usage.shrunk();
        }
        renamed
    }

    async fn symlink_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        src_path: String,
        dest_path: String,
    ) -> FsResult<()> {
        let cost = Usage::name_cost(&dest_path) + src_path.len() as u64;
        let charge = self.charge_entry(&fd, cost)?;
        settle(self.fs.symlink_at(fd, src_path, dest_path).await, charge)
    }

    async fn unlink_file_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        path: String,
    ) -> FsResult<()> {
        let usage = self.charged(&fd);
        self.fs.unlink_file_at(fd, path).await?;
        if let Some(usage) = usage {
            usage.shrunk();
        }
        Ok(())
    }

    fn read_via_stream(
        &mut self,
        fd: Resource<types::Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<wasmtime_wasi::p2::DynInputStream>> {
        self.fs.read_via_stream(fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<types::Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynOutputStream>> {
        self.charged_stream(fd, At::Offset(offset))
    }

    fn append_via_stream(
        &mut self,
        fd: Resource<types::Descriptor>,
    ) -> FsResult<Resource<DynOutputStream>> {
        self.charged_stream(fd, At::End)
    }

    async fn is_same_object(
        &mut self,
        a: Resource<types::Descriptor>,
        b: Resource<types::Descriptor>,
    ) -> wasmtime::Result<bool> {
        self.fs.is_same_object(a, b).await
    }

    async fn metadata_hash(
        &mut self,
        fd: Resource<types::Descriptor>,
    ) -> FsResult<types::MetadataHashValue> {
        self.fs.metadata_hash(fd).await
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::MetadataHashValue> {
        self.fs.metadata_hash_at(fd, path_flags, path).await
    }
}

impl Files<'_> {
    /// An output stream on the file `fd` whose writes are charged.
    fn charged_stream(
        &mut self,
        fd: Resource<types::Descriptor>,
        at: At,
    ) -> FsResult<Resource<DynOutputStream>> {
        let usage = self.charged(&fd);
        let file = match self.fs.table.get(&fd)? {
            Descriptor::File(f) if f.perms.write_not_permitted() => {
                return Err(ErrorCode::NotPermitted.into())
            }
            Descriptor::File(f) => f.file.clone(),
            Descriptor::Dir(_) => return Err(ErrorCode::BadDescriptor.into()),
        };
        let stream: DynOutputStream = Box::new(ChargedStream {
            file,
            at,
            usage,
            closed: false,
        });
        Ok(self.fs.table.push(stream)?)
    }
}

/// Where a stream writes.
#[derive(Clone, Copy)]
enum At {
    Offset(u64),
    End,
}

/// A file's output stream whose every write is charged to the quota first. Writes are
/// done when they are made (a local file, at most [`STREAM_WRITE`] bytes each; the
/// component's file operations run on its own task anyway), so the stream is always
/// ready.
struct ChargedStream {
    file: Arc<std::fs::File>,
    at: At,
    usage: Option<Arc<Usage>>,
    /// A write failed (other than at the quota): the stream is closed.
    closed: bool,
}

impl ChargedStream {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let old = self.file.metadata()?.len();
        let start = match self.at {
            At::Offset(at) => at,
            At::End => old,
        };
        let grows = growth(old, old.max(start.saturating_add(bytes.len() as u64)));
        let charge = match &self.usage {
            Some(usage) => match usage.charge(grows) {
                Ok(charge) => Some(charge),
                Err(_) => return Err(io::Error::from_raw_os_error(ENOSPC)),
            },
            None => None,
        };
        let written = self.file.write_all_at(bytes, start);
        if written.is_err() {
            if let (Some(usage), Some(charge)) = (&self.usage, charge) {
                usage.refund(charge);
            }
            self.closed = true;
        }
        written?;
        if let At::Offset(at) = &mut self.at {
            *at = start.saturating_add(bytes.len() as u64);
        }
        Ok(())
    }
}

/// Linux's `ENOSPC`, which wasmtime-wasi reports to the guest as `insufficient-space`.
const ENOSPC: i32 = 28;

#[wasmtime_wasi::async_trait]
impl OutputStream for ChargedStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        if self.closed {
            return Err(StreamError::Closed);
        }
        if bytes.len() > STREAM_WRITE {
            return Err(StreamError::trap("write larger than check-write allowed"));
        }
        self.write_all(&bytes)
            .map_err(|e| StreamError::LastOperationFailed(e.into()))
    }

    fn flush(&mut self) -> StreamResult<()> {
        match self.closed {
            true => Err(StreamError::Closed),
            false => Ok(()),
        }
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        match self.closed {
            true => Err(StreamError::Closed),
            false => Ok(STREAM_WRITE),
        }
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for ChargedStream {
    async fn ready(&mut self) {}
}

/// A directory listing read as the guest asks for entries: an open directory and the
/// kernel's buffer of the next entries, whatever the directory's size.
struct Listing(cap_std::fs::ReadDir);

impl Listing {
    fn of(dir: &std::fs::File) -> io::Result<Listing> {
        // `entries` opens the directory anew: its position is the listing's own.
        let dir = cap_std::fs::Dir::from_std_file(dir.try_clone()?);
        Ok(Listing(dir.entries()?))
    }

    fn next(&mut self) -> FsResult<Option<types::DirectoryEntry>> {
        let Some(entry) = self.0.next() else {
            return Ok(None);
        };
        let entry = entry?;
        let ty = entry.file_type()?;
        let type_ = if ty.is_dir() {
            types::DescriptorType::Directory
        } else if ty.is_file() {
            types::DescriptorType::RegularFile
        } else if ty.is_symlink() {
            types::DescriptorType::SymbolicLink
        } else {
            types::DescriptorType::Unknown
        };
        let name = entry
            .file_name()
            .into_string()
            .map_err(|_| ErrorCode::IllegalByteSequence)?;
        Ok(Some(types::DirectoryEntry { type_, name }))
    }
}

/// The streams of `read-directory` are [`Listing`]s: the resource type is
/// wasmtime-wasi's (`ReaddirIterator`), but only these functions ever see one.
impl HostDirectoryEntryStream for Files<'_> {
    async fn read_directory_entry(
        &mut self,
        stream: Resource<ReaddirIterator>,
    ) -> FsResult<Option<types::DirectoryEntry>> {
        let listing = Resource::<Listing>::new_borrow(stream.rep());
        self.fs.table.get_mut(&listing)?.next()
    }

    fn drop(&mut self, stream: Resource<ReaddirIterator>) -> wasmtime::Result<()> {
        self.fs
            .table
            .delete(Resource::<Listing>::new_own(stream.rep()))?;
        Ok(())
    }
}
